"""The Lua scripts of :mod:`.redis`: the claim rule and the transitions, once, on Redis.

Every script is :data:`PRELUDE` (the :data:`HELPERS`, then ``begin(KEYS, ARGV)``: the call's
state) and its body. The same bodies are the functions of one Redis Functions library
(:data:`LIBRARY`, Redis 7+), whose helpers are defined once when it loads instead of on every call
(:mod:`.redis` says where each runs). Keys: ``KEYS[1]`` the pending set of the tasks routed to
nobody (score: sequence, member: task id), ``KEYS[2]`` the held set (score: lease expiry in ms,
member: task id), ``KEYS[3]`` the owners set (score 0, member ``owner NUL seq NUL id``, read by
lex range), ``KEYS[4]`` the routed set of the pending tasks routed to a member (score 0, member
``assignee NUL seq NUL id``: a member's own in ``seq`` order by lex range, so a claim never reads
the tasks routed to others), then ``KEYS[5..]`` the task records the client *declared*. Task records are the store's entries (hash
``{v: JSON, n: version}``); a record's name is derived from the pending set's: ``KEYS[1]`` with
its :data:`PENDING_SUFFIX` replaced by :data:`RECORD_INFIX` and the id (the queue checks that the
store names them so, see :func:`~.redis.redis_queue_supported`), in the same hash slot.
``ARGV[1]`` is now in µs since the epoch (the scripts write it as ISO 8601, as pydantic does),
``ARGV[2]`` ``'1'`` on a standalone server (see below); a script's own arguments follow from
``ARGV[3]``. The rule mirrors :func:`agentscope_teams.teams.rules.eligibility.claim_verdict`; the history
texts mirror :mod:`agentscope_teams.teams.rules.transitions` (the board's conformance tests run both paths).

**Every key a script touches is in KEYS** (Redis Cluster routes a script, and answers ASK or
TRYAGAIN while its slot migrates, by the declared keys only). A script that needs a record the
client did not declare (the next pending task, a blocker, an expired lease's task) reads nothing
more and writes nothing: it replies :data:`NEED` and the ids to declare, and the client calls again
with them. So a declared record that is absent is provably gone (during a migration Redis runs a
script only where all its declared keys are), and only then is its index entry removed as stale.
On a standalone server (no slots, nothing migrates) the client passes ``ARGV[2] = '1'``: every
record counts as declared, so a script reads what it needs, never replies NEED, and the client
declares no records it only guesses at (a claim's KEYS are the four sets, plus the team record
of a guard): fewer keys to pack, send and hash per call.

**Routed tasks.** A pending task routed to a member is in the routed set, not the pending set
(``to_pending`` in :data:`HELPERS`). A board written by the previous release has them in the
pending set: a claim that meets one there moves it (a lazy migration, once per task;
``rebuild_index`` moves them all). Scripts of the previous release running on the same board
during an upgrade read and write only the first three sets: the tasks they put back in the
pending set are moved by the next claim here, and the routed set's entries they leave behind when
they claim, finish or cancel a task are removed as stale by the next claim that reads them. No
task is lost; a task in the routed set is claimed by ``claim_next`` of this release only (the
previous release's ``claim_next`` and open-task listing do not see it; its named ``claim`` takes
it).

Replies: ``{1, json, version}`` written, ``{0, json, version}`` nothing to write, ``{-1, json,
version}`` refused (the board derives the error from the record), ``{-2}`` no such task, ``{3,
id...}`` declare these records and call again; ``claim_next`` returns ``{1, json, version,
hint...}``, ``{0, hint...}`` (nothing claimable) or ``{2, offset, hint...}`` (scan limit reached:
call again from ``offset``), where the hints are the pending ids its next call will likely read.
"""

import hashlib

#: The reply code of a script that needs records the client did not declare (the ids follow).
NEED = 3
#: The end of a team's pending set's name, and what replaces it to name a task record (+ the id).
PENDING_SUFFIX, RECORD_INFIX = "open:queue", "task/"
#: Pending tasks one claim script passes by before answering "more" (the board then calls again).
SCAN = 256

HELPERS = r"""
-- A call's state, set by begin(KEYS, ARGV) before anything else runs.
local K, P, H, O, R, BEFORE, NOW_US, NOW, OPEN
-- ARGV[1] as given (now in µs, integer digits), and now in ms as text, made once
local NOW_US_TEXT, NOW_TEXT
-- The records the client declared (a read of any other id is noted in NEED instead); the ids
-- noted; the version of each record read (its 'n' field), so that a save writes it in the same
-- command; now as ISO text, made once.
local DECLARED, NEED, NEEDED, VERSION, NOW_ISO
-- cjson.null (a library's load sees no cjson, so it is set with the call's state)
local NULL
local AHEAD = 16
-- An empty table never written to: DECLARED on a standalone server, NEED until an id is noted.
local NONE = {}
-- The pending set BEFORE was derived from (a library keeps both across calls).
local BEFORE_OF

local function begin(keys, argv)
  K, P, H, O, R, NULL = keys, keys[1], keys[2], keys[3], keys[4], cjson.null
  if P ~= BEFORE_OF then
    BEFORE_OF, BEFORE = P, string.sub(P, 1, #P - #'$PENDING_SUFFIX') .. '$RECORD_INFIX'
  end
  NOW_US_TEXT, NOW_TEXT = argv[1], nil
  NOW_US = tonumber(NOW_US_TEXT)
  NOW = math.floor(NOW_US / 1000)
  -- '1': a standalone server, where a script may read records it was not given (no NEED replies)
  OPEN = argv[2] == '1'
  DECLARED, NEED, NEEDED, VERSION, NOW_ISO = NONE, NONE, nil, {}, nil
  if not OPEN then
    DECLARED = {}
    for i = 5, #keys do DECLARED[keys[i]] = true end
  end
end

local function name_of(id) return BEFORE .. id end

-- A number given to redis.call is written as text by Redis on every call (~0.3 µs each): the
-- small counts and ranks the scripts pass are made text once (a library keeps them).
local TEXT = {}
local function text(n)
  local s = TEXT[n]
  if s == nil then
    s = string.format('%d', n)
    if n >= 0 and n < 4096 then TEXT[n] = s end
  end
  return s
end

-- now in ms as text: ARGV[1] (µs, integer digits) without its last three digits
local function now_text()
  if NOW_TEXT == nil then
    NOW_TEXT = NOW_US >= 1000 and string.sub(NOW_US_TEXT, 1, -4) or string.format('%d', NOW)
  end
  return NOW_TEXT
end

local function declared(name) return OPEN or DECLARED[name] end

local function need(id)
  if NEEDED == nil then NEED, NEEDED = {}, {} end
  if not NEEDED[id] then
    NEEDED[id] = true
    NEED[#NEED + 1] = id
  end
end

-- The NEED reply: the ids noted, then the undeclared ids of set of ranks first..last (the reads
-- that would follow).
local function need_reply(set, first, last)
  if set ~= nil then
    for _, id in ipairs(redis.call('ZRANGE', set, text(first), text(last))) do
      if not declared(name_of(id)) then need(id) end
    end
  end
  local out = {3}
  for _, id in ipairs(NEED) do out[#out + 1] = id end
  return out
end

local function decode(raw)
  local ok, t = pcall(cjson.decode, raw)
  if ok and type(t) == 'table' and type(t.history) == 'table' then return t end
  return nil
end

-- The record of id: (table or nil, raw or nil, known); an undecodable one is (nil, raw, true), an
-- absent declared one (nil, nil, true): provably gone. An undeclared one is not read: (nil, nil,
-- false), its id noted in NEED.
local function load(id)
  local name = name_of(id)
  if not declared(name) then
    need(id)
    return nil, nil, false
  end
  local got = redis.call('HMGET', name, 'v', 'n')
  local raw = got[1]
  if not raw then return nil, nil, true end
  VERSION[id] = tonumber(got[2])
  return decode(raw), raw, true
end

-- 'YYYY-MM-DD' of a day since the epoch (UTC)
local function iso_day(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  local y = yoe + era * 400 + (m <= 2 and 1 or 0)
  return string.format('%04d-%02d-%02d', y, m, d)
end

-- The last two days' text (a library keeps it across calls: a claim writes today's date twice,
-- as now and as its lease's expiry, which crosses midnight at times).
local DAY_AT, DAY_TEXT = {-1, -1}, {'', ''}
-- The last two seconds' text, likewise (a claim's now and its lease's expiry; the next claims
-- mostly fall in the same seconds).
local SECOND_AT, SECOND_TEXT = {-1, -1}, {'', ''}

-- 'YYYY-MM-DDTHH:MM:SS' of s seconds since the epoch (UTC)
local function iso_second(s)
  local days = math.floor(s / 86400)
  local rem = s - days * 86400
  local date
  if DAY_AT[1] == days then
    date = DAY_TEXT[1]
  elseif DAY_AT[2] == days then
    date = DAY_TEXT[2]
  else
    date = iso_day(days)
    DAY_AT[2], DAY_TEXT[2], DAY_AT[1], DAY_TEXT[1] = DAY_AT[1], DAY_TEXT[1], days, date
  end
  return string.format('%sT%02d:%02d:%02d', date,
    math.floor(rem / 3600), math.floor(rem % 3600 / 60), rem % 60)
end

-- 'YYYY-MM-DDTHH:MM:SS' of s seconds since the epoch (UTC), from the cache when it has it
local function iso_s(s)
  if SECOND_AT[1] == s then return SECOND_TEXT[1] end
  if SECOND_AT[2] == s then return SECOND_TEXT[2] end
  local made = iso_second(s)
  SECOND_AT[2], SECOND_TEXT[2], SECOND_AT[1], SECOND_TEXT[1] = SECOND_AT[1], SECOND_TEXT[1], s, made
  return made
end

-- ms since the epoch as a record's ISO 8601 text, to the ms (a lease's expiry)
local function iso(ms)
  local s = math.floor(ms / 1000)
  return iso_s(s) .. string.format('.%03dZ', ms - s * 1000)
end

-- now as a record's ISO 8601 text, to the µs (as pydantic writes a datetime), made once
local function now_iso()
  if NOW_ISO == nil then
    local s = math.floor(NOW_US / 1000000)
    NOW_ISO = iso_s(s) .. string.format('.%06dZ', NOW_US - s * 1000000)
  end
  return NOW_ISO
end

-- The record's lists, which cjson writes as {} when empty: those are written as [] by hand.
local LISTS = {'blocked_by', 'history'}
local function encode(t)
  local empties
  for i = 1, #LISTS do
    local f = LISTS[i]
    local v = t[f]
    if type(v) == 'table' and next(v) == nil then
      t[f] = nil
      empties = (empties and empties .. ',' or '') .. '"' .. f .. '":[]'
    end
  end
  local raw = cjson.encode(t)
  if empties == nil then return raw end
  if raw == '{}' then return '{' .. empties .. '}' end
  return '{' .. empties .. ',' .. string.sub(raw, 2)
end

local function save(t)
  local raw = encode(t)
  local name = name_of(t.id)
  local n = VERSION[t.id]
  if n == nil then  -- not read here, or written without a version: the store's own count
    redis.call('HSET', name, 'v', raw)
    return {1, raw, redis.call('HINCRBY', name, 'n', 1)}
  end
  n = n + 1
  VERSION[t.id] = n
  redis.call('HSET', name, 'v', raw, 'n', text(n))
  return {1, raw, n}
end

local function event(t, actor, action, detail)
  local at = now_iso()
  t.history[#t.history + 1] = {at = at, actor = actor, action = action, detail = detail}
  t.updated_at = at
end

local function q(s) return "'" .. s .. "'" end

local function owner_member(owner, t)
  return owner .. '\0' .. string.format('%020d', t.seq) .. '\0' .. t.id
end

local function routed(t) return t.assignee ~= nil and t.assignee ~= NULL end

-- t, pending: in the routed set when routed to a member, else in the pending set.
local function to_pending(t)
  if routed(t) then
    redis.call('ZADD', R, '0', owner_member(t.assignee, t))
  else
    redis.call('ZADD', P, t.seq, t.id)
  end
end

-- t out of the pending and routed sets (it is claimed or finished).
local function unpend(t)
  redis.call('ZREM', P, t.id)
  if routed(t) then redis.call('ZREM', R, owner_member(t.assignee, t)) end
end

-- Bring the indexes in step with t's state (status and owner as they are now).
local function unindex(t, owner)
  unpend(t)
  redis.call('ZREM', H, t.id)
  if owner ~= nil and owner ~= NULL then redis.call('ZREM', O, owner_member(owner, t)) end
end

local function held_until(t, until_ms)
  redis.call('ZADD', H, until_ms, t.id)
  redis.call('ZADD', O, '0', owner_member(t.owner, t))
end

local function expiry(t)
  if t.status ~= 'in_progress' then return nil end
  return tonumber(redis.call('ZSCORE', H, t.id))
end

local function lease_expired(t)
  local e = expiry(t)
  return e ~= nil and e <= NOW
end

-- The claim rule (eligibility.claim_verdict), first check that applies decides.
local function verdict(t, member, renew_own)
  local expired = lease_expired(t)
  if renew_own and t.status == 'in_progress' and t.owner == member then return 'renew' end
  if t.status == 'in_progress' then
    if not expired then return 'held' end
    if t.attempts >= t.max_attempts then return 'exhausted' end
  elseif t.status ~= 'pending' then
    return 'finished'
  end
  if t.assignee ~= NULL and t.assignee ~= member then return 'assigned' end
  if t.status == 'pending' then
    local waiting, blocked, unknown = false, false, false
    for _, b in ipairs(t.blocked_by) do
      local bt, raw, known = load(b)
      if not known then
        unknown = true  -- noted in NEED; a known blocker that fails decides anyway
      elseif raw == nil then
        blocked = true
      elseif bt ~= nil then
        if bt.status == 'failed' or bt.status == 'cancelled' then blocked = true end
        if bt.status ~= 'completed' then waiting = true end
      else
        waiting = true  -- unreadable: counts as unfinished
      end
    end
    if blocked then return 'blocked' end
    if unknown then return 'unknown' end
    if waiting then return 'waiting' end
    return 'claim'
  end
  return 'reclaim'
end

-- rules.expired: back to pending, or failed once every attempt is used. Indexes follow.
local function expire(t)
  local owner = t.owner
  unindex(t, owner)
  if t.attempts >= t.max_attempts then
    local err = 'task ' .. q(t.id) .. ' failed: the lease of ' .. q(owner) .. ' expired and all '
      .. string.format('%d', t.max_attempts) .. ' attempts are used; assign a new task to retry'
    event(t, 'board', 'lease_expired', err)
    t.status, t.error, t.lease_expires_at = 'failed', err, NULL
  else
    event(t, 'board', 'lease_expired', q(owner) .. ' stopped renewing its lease; back to pending')
    t.status, t.owner, t.lease_expires_at = 'pending', NULL, NULL
    to_pending(t)
  end
end

-- A lease in seconds as ms (as renewed() rounds it).
local function ms_of(lease) return math.floor(lease * 1000 + 0.5) end

-- rules.claimed: one more attempt, a fresh lease (seconds, ms).
local function claimed(t, member, lease, lease_ms)
  -- unindex, but for the held set: held_until's ZADD below replaces its entry
  unpend(t)
  if t.owner ~= nil and t.owner ~= NULL then redis.call('ZREM', O, owner_member(t.owner, t)) end
  t.attempts = t.attempts + 1
  event(t, member, 'claimed', 'attempt ' .. text(t.attempts) .. ' of ' .. text(t.max_attempts))
  t.status, t.owner, t.lease_seconds = 'in_progress', member, lease
  t.lease_expires_at = iso(NOW + lease_ms)
  held_until(t, NOW + lease_ms)
  return save(t)
end

-- rules.renewed: the lease moved, no history entry.
local function renewed(t, lease)
  local until_ms = NOW + ms_of(lease)
  t.lease_seconds, t.lease_expires_at, t.updated_at = lease, iso(until_ms), now_iso()
  held_until(t, until_ms)
  return save(t)
end

-- The version of id's record as this script read it (no second read when load noted it).
local function version_of(id)
  return VERSION[id] or redis.call('HGET', name_of(id), 'n')
end

local function refused(raw, id)
  return {-1, raw, version_of(id)}
end

local function unchanged(raw, id)
  return {0, raw, version_of(id)}
end

-- A team guard (queues.base.TeamGuard): the team record, the last key, still at version v
-- ('' or nil: no guard). A deleted team has no version: the guard fails.
local function guard_holds(v)
  if v == nil or v == '' then return true end
  return redis.call('HGET', K[#K], 'n') == v
end

-- claim_next's helpers (here, so that a library defines them once, not on every call).

-- list with item appended; a nil list becomes a new one (most claims note nothing).
local function push(list, item)
  if list == nil then return {item} end
  list[#list + 1] = item
  return list
end

-- Remove the stale index entries ({set, member}), move the routed tasks met in the pending set
-- to the routed set (a board of the previous release), and settle the leases (tasks) noted.
local function flush(stale, settle, moved)
  if stale ~= nil then
    for _, s in ipairs(stale) do redis.call('ZREM', s[1], s[2]) end
  end
  if moved ~= nil then
    for _, t in ipairs(moved) do
      redis.call('ZREM', P, t.id)
      to_pending(t)
    end
  end
  if settle ~= nil then
    for _, t in ipairs(settle) do
      expire(t)
      save(t)
    end
  end
end

-- The id of an owners or routed set member (owner or assignee NUL seq NUL id).
local function id_of(m) return string.match(m, '%z([^%z]*)$') end

-- The routed set's members of member's pending tasks, oldest first, after the member after
-- (nil: from the first) and with seq below below (nil: any), count at most (-1: all).
local function routed_to(member, after, below, count)
  local first = after and '(' .. after or '[' .. member .. '\0'
  local last = below and '(' .. member .. '\0' .. string.format('%020d', below)
    or '(' .. member .. '\1'
  return redis.call('ZRANGEBYLEX', R, first, last, 'LIMIT', '0', text(count))
end

-- The hints of a reply: out, then the pending ids of ranks first..last and the first ids routed
-- to member (what the next call will read); none on a standalone server, where nothing is
-- declared on a guess.
local function hinted(out, first, last, member)
  if OPEN then return out end
  for _, id in ipairs(redis.call('ZRANGE', P, text(first), text(last))) do
    out[#out + 1] = id
  end
  for _, m in ipairs(routed_to(member, nil, nil, AHEAD)) do out[#out + 1] = id_of(m) end
  return out
end

-- A claim's reply (w: what save wrote); last_read: the rank of the last pending id it passed
-- by (-1: none).
local function won(w, last_read, member)
  return hinted(w, 0, last_read + AHEAD, member)
end

-- A record not given: ask at once for every one this call may read (blockers aside): the
-- member's own (owners and routed members), the expired leases', the pending ids of ranks
-- offset..scan_end.
local function need_all(mine, expired, offset, scan_end, routed_page)
  for _, m in ipairs(mine) do
    local id = id_of(m)
    if not declared(name_of(id)) then need(id) end
  end
  for _, m in ipairs(routed_page or NONE) do
    local id = id_of(m)
    if not declared(name_of(id)) then need(id) end
  end
  for _, id in ipairs(expired) do
    if not declared(name_of(id)) then need(id) end
  end
  return need_reply(P, offset, scan_end)
end
"""
HELPERS = HELPERS.replace("$PENDING_SUFFIX", PENDING_SUFFIX).replace("$RECORD_INFIX", RECORD_INFIX)
#: What every script starts with: the helpers, then the call's state from its KEYS and ARGV.
PRELUDE = HELPERS + "begin(KEYS, ARGV)\n"

#: ARGV[3] member, [4] lease s, [5] '1' prefer own, [6] offset (it passes by at most :data:`SCAN`
#: pending tasks), [7] the team guard's version ('' none; the team record is then the last key: a stale guard
#: claims nothing, ``{0}``). It takes the member's own held task (prefer own), else an expired lease
#: it may take, else the lower ``seq`` of the first claimable task of the pending set (routed to
#: nobody) and the member's first claimable routed task (below that one's ``seq``: a lex range of
#: the routed set, which holds no other member's tasks in it). It reads before it writes: stale
#: index entries, routed tasks met in the pending set (moved to the routed set) and leases to
#: settle are noted while it looks, and written only once it knows its answer, so a NEED reply has
#: written nothing. Its helpers (``flush``, ``hinted``, ``won``, ``need_all``) are in
#: :data:`HELPERS`.
CLAIM_NEXT = (
    PRELUDE
    + r"""
local member, lease = ARGV[3], tonumber(ARGV[4])
local lease_ms = ms_of(lease)
-- {set, member} to remove; tasks to expire and save; routed tasks to move out of the pending set
local stale, settle, moved, dropped = nil, nil, nil, 0
if not guard_holds(ARGV[7]) then return {0} end
local mine, expired = NONE, redis.call('ZRANGEBYSCORE', H, '-inf', now_text(), 'LIMIT', '0', '8')
if ARGV[5] == '1' then
  mine = redis.call('ZRANGEBYLEX', O, '[' .. member .. '\0', '(' .. member .. '\1')
end
local offset, limit, step = tonumber(ARGV[6]), $SCAN, 8
local seen, scan_end = 0, offset + limit - 1
for _, m in ipairs(mine) do
  local t, raw, known = load(id_of(m))
  if not known then return need_all(mine, expired, offset, scan_end) end
  if t ~= nil and t.status == 'in_progress' and t.owner == member then
    flush(stale, settle, moved)
    return won(renewed(t, lease), -1, member)
  end
  if t ~= nil or raw == nil then stale = push(stale, {O, m}) end
end
for _, id in ipairs(expired) do
  local t, raw, known = load(id)
  if not known then return need_all(mine, expired, offset, scan_end) end
  if raw == nil then
    stale = push(stale, {H, id})
  elseif t ~= nil then
    if t.status ~= 'in_progress' then
      stale = push(stale, {H, id})
    else
      local v = verdict(t, member, false)
      if v == 'reclaim' then
        flush(stale, settle, moved)
        expire(t)
        return won(claimed(t, member, lease, lease_ms), -1, member)
      end
      if v == 'exhausted' or v == 'assigned' then settle = push(settle, t) end
    end
  end
end
-- The pending set, oldest first, a few ids per read (usually the first is claimable): its first
-- claimable task (free, or routed to this member by the previous release).
local first, first_read, last_seq, full = nil, -1, nil, false
while first == nil and not full do
  local ids = redis.call('ZRANGE', P, text(offset), text(offset + step - 1))
  for i, id in ipairs(ids) do
    local t, raw, known = load(id)
    if not known then return need_all(mine, expired, offset, scan_end) end
    if raw == nil or (t ~= nil and t.status ~= 'pending') then
      stale = push(stale, {P, id})  -- removed by flush: the next call starts that much earlier
      dropped = dropped + 1
    elseif t ~= nil then
      last_seq = t.seq
      local v = (routed(t) and t.assignee ~= member) and 'routed' or verdict(t, member, false)
      if v == 'unknown' then return need_reply(P, offset + i - 1, scan_end) end
      if v == 'claim' then
        first, first_read = t, offset + i - 2 - dropped
        break
      end
      if routed(t) then  -- routed, not claimable now: to the routed set
        moved = push(moved, t)
        dropped = dropped + 1
      end
    end
  end
  if first == nil then
    if #ids < step then break end
    offset, seen = offset + step, seen + step
    full = seen >= limit
  end
end
-- This member's routed tasks below that one (or below the last one read, when the scan stopped).
local below = first and first.seq or (full and (last_seq or 0)) or nil
local own_task, after = nil, nil
while own_task == nil do
  local page = routed_to(member, after, below, step)
  for _, m in ipairs(page) do
    local t, raw, known = load(id_of(m))
    if not known then  -- every routed task this loop may read, not a page per call
      return need_all(mine, expired, offset, scan_end, routed_to(member, after, below, -1))
    end
    if raw == nil or (t ~= nil and (t.status ~= 'pending' or t.assignee ~= member)) then
      stale = push(stale, {R, m})
    elseif t ~= nil then
      local v = verdict(t, member, false)
      if v == 'unknown' then return need_reply(nil) end
      if v == 'claim' then
        own_task = t
        break
      end
    end
    after = m
  end
  if own_task == nil and #page < step then break end
end
if own_task ~= nil then
  flush(stale, settle, moved)
  return won(claimed(own_task, member, lease, lease_ms), -1, member)
end
if first ~= nil then
  flush(stale, settle, moved)
  return won(claimed(first, member, lease, lease_ms), first_read, member)
end
flush(stale, settle, moved)
if not full then return hinted({0}, 0, AHEAD - 1, member) end
return hinted({2, offset - dropped}, offset - dropped, offset - dropped + AHEAD - 1, member)
"""
).replace("$SCAN", str(SCAN))

#: ARGV[3] id, [4] member, [5] lease s.
CLAIM = (
    PRELUDE
    + r"""
local id, member, lease = ARGV[3], ARGV[4], tonumber(ARGV[5])
local lease_ms = ms_of(lease)
local t, raw = load(id)
if raw == nil then return {-2} end
if t == nil then return refused(raw, id) end
local v = verdict(t, member, true)
if v == 'unknown' then return need_reply(nil) end  -- a blocker not declared
if v == 'renew' then return renewed(t, lease) end
if v == 'claim' then return claimed(t, member, lease, lease_ms) end
if v == 'reclaim' then
  expire(t)
  return claimed(t, member, lease, lease_ms)
end
if v == 'exhausted' then  -- record the failure; refused as read (the rule names the lapse)
  local out = refused(raw, id)
  expire(t)
  save(t)
  return out
end
return refused(raw, id)
"""
)


def _owner_only(body: str, first: str = "") -> str:
    """A transition only the task's owner may make (rules.require_owner), then ``body``
    (``first`` runs before the record is read)."""
    return (
        PRELUDE
        + first
        + r"""
local id, member = ARGV[3], ARGV[4]
local t, raw = load(id)
if raw == nil then return {-2} end
if t == nil then return refused(raw, id) end
"""
        + body
    )


_REQUIRE_OWNER = """
if t.status ~= 'in_progress' or t.owner ~= member then return refused(raw, id) end
"""

#: ARGV[5] status, ARGV[6] the text's field, ARGV[7] the text, ARGV[8] the history detail,
#: ARGV[9] a completion's data as JSON text ('' = none), ARGV[10] '1' when the board checked it
#: against the task's result schema (a task declaring one is refused until then), ARGV[11] the
#: team guard's version ('' none; else the team record is the last key, and a stale guard replies
#: ``{-3}``: nothing written). Structured
#: fields travel as JSON text (``*_json``), so cjson never re-encodes them.
FINISH = _owner_only(
    r"""
local status = ARGV[5]
if t.status == status and t.owner == member then return unchanged(raw, id) end
"""
    + _REQUIRE_OWNER
    + r"""
if status == 'completed' then
  local schema = t.result_schema_json
  if schema ~= nil and schema ~= NULL and ARGV[10] ~= '1' then return refused(raw, id) end
  if ARGV[9] ~= '' then t.result_data_json = ARGV[9] end
end
unindex(t, t.owner)
event(t, member, status, ARGV[8])
t.status, t.lease_expires_at = status, NULL
t[ARGV[6]] = ARGV[7]
return save(t)
""",
    "\nif not guard_holds(ARGV[11]) then return {-3} end\n",
)

RELEASE = _owner_only(
    _REQUIRE_OWNER
    + r"""
unindex(t, t.owner)
event(t, member, 'released', '')
t.status, t.owner, t.lease_expires_at = 'pending', NULL, NULL
to_pending(t)
return save(t)
"""
)

#: ARGV[5] lease s ('' = the task's own).
RENEW = _owner_only(
    _REQUIRE_OWNER
    + r"""
local lease = ARGV[5] == '' and t.lease_seconds or tonumber(ARGV[5])
return renewed(t, lease)
"""
)

#: ARGV[4] is the actor (anyone: the client checks the lead); ARGV[5] the reason.
CANCEL = _owner_only(
    r"""
if t.status == 'cancelled' then return unchanged(raw, id) end
if t.status ~= 'pending' and t.status ~= 'in_progress' then return refused(raw, id) end
unindex(t, t.owner)
event(t, member, 'cancelled', ARGV[5])
t.status, t.lease_expires_at = 'cancelled', NULL
t.error = (ARGV[5] == '') and NULL or ARGV[5]
return save(t)
"""
)

#: ARGV[3] offset (expired entries left in place by earlier batches), [4] batch size. Settles the
#: expired leases of a batch; replies ``{more, left, json, version, ...}`` (more: 1 when the batch
#: was full; left: entries it left in place, undecodable records) or a NEED reply.
REAP = (
    PRELUDE
    + r"""
local offset, batch = tonumber(ARGV[3]), tonumber(ARGV[4])
local ids = redis.call('ZRANGEBYSCORE', H, '-inf', now_text(), 'LIMIT', text(offset), text(batch))
for _, id in ipairs(ids) do
  if not declared(name_of(id)) then need(id) end
end
if #NEED > 0 then return need_reply(nil) end
local out = {#ids == batch and 1 or 0, 0}
for _, id in ipairs(ids) do
  local t, raw = load(id)
  if raw == nil or (t ~= nil and t.status ~= 'in_progress') then
    redis.call('ZREM', H, id)  -- declared and absent (or settled): provably stale
  elseif t ~= nil then
    expire(t)
    local w = save(t)
    out[#out + 1] = w[2]
    out[#out + 1] = w[3]
  else
    out[2] = out[2] + 1
  end
end
return out
"""
)

#: A page of each set ARGV[3] names (``'0'`` pending, ``'1'`` held, ``'2'`` routed; ``'012'``: all,
#: in one call),
#: from rank ARGV[4], ARGV[5] ids each. Replies ``{0, then per set: number of members read, number
#: of records found, (id, json, version) of each whose record exists...}`` or a NEED reply.
OPEN_PAGE = (
    PRELUDE
    + r"""
-- ARGV[3]: the sets to read, one character each ('0' pending, '1' held, '2' routed: its members'
-- ids), each from rank ARGV[4],
-- ARGV[5] ids at most. Reply {0, then per set: ids in the page, records found, (id, json,
-- version) per record found}; a NEED reply covers every set's page.
local sets, offset, limit = ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5])
local pages = {}
for i = 1, #sets do
  local which = string.sub(sets, i, i)
  local set = which == '1' and H or which == '2' and R or P
  pages[i] = redis.call('ZRANGE', set, offset, offset + limit - 1)
  if which == '2' then
    for j, m in ipairs(pages[i]) do pages[i][j] = id_of(m) end
  end
  for _, id in ipairs(pages[i]) do
    if not declared(name_of(id)) then need(id) end
  end
end
if #NEED > 0 then return need_reply(nil) end
local out = {0}
for _, ids in ipairs(pages) do
  out[#out + 1] = #ids
  local at = #out + 1
  out[at] = 0
  for _, id in ipairs(ids) do
    local name = name_of(id)
    local raw = redis.call('HGET', name, 'v')
    if raw then
      out[#out + 1] = id
      out[#out + 1] = raw
      out[#out + 1] = redis.call('HGET', name, 'n')
      out[at] = out[at] + 1
    end
  end
end
return out
"""
)

#: ``rebuild``: the four sets replaced whole, atomically. KEYS: the four sets (pending, held,
#: owners, routed). ARGV: how many entries each set gets, then each set's entries in that order,
#: as score, member pairs. Not in :data:`SCRIPTS`: rarely run, never a function of the library.
REBUILD = """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
local at = 5
for i = 1, 4 do
  for _ = 1, tonumber(ARGV[i]) do
    redis.call('ZADD', KEYS[i], ARGV[at], ARGV[at + 1])
    at = at + 2
  end
end
return (at - 5) / 2
"""

#: The scripts, by the name the queue calls them.
SCRIPTS = {
    "CLAIM_NEXT": CLAIM_NEXT,
    "CLAIM": CLAIM,
    "FINISH": FINISH,
    "RELEASE": RELEASE,
    "RENEW": RENEW,
    "CANCEL": CANCEL,
    "REAP": REAP,
    "OPEN_PAGE": OPEN_PAGE,
}
#: The scripts that only read (registered as ``no-writes`` functions).
READ_ONLY = frozenset({"OPEN_PAGE"})


def _library() -> tuple[str, dict[str, str]]:
    """The scripts as one Redis Functions library (Redis 7+) and each one's function name.

    Its helpers are defined once, when the library loads, not on every call as a script's
    prelude is; a function sets the call's state with ``begin`` and runs the script's body as
    it is. The library's and functions' names carry a hash of the text, so processes of two
    releases on one server each call their own."""
    bodies = {name: script.removeprefix(PRELUDE) for name, script in SCRIPTS.items()}
    tag = hashlib.sha1((HELPERS + "".join(bodies.values())).encode()).hexdigest()[:12]
    names = {name: f"agentscope_teams_queue_{tag}_{name.lower()}" for name in SCRIPTS}
    parts = [f"#!lua name=agentscope_teams_queue_{tag}\n", HELPERS]
    for name, body in bodies.items():
        flags = ", flags = {'no-writes'}" if name in READ_ONLY else ""
        parts.append(
            f"redis.register_function{{function_name = '{names[name]}', "
            f"callback = function(KEYS, ARGV)\nbegin(KEYS, ARGV)\n{body}\nend{flags}}}\n"
        )
    return "".join(parts), names


#: The library of :func:`_library` and its function names (see :mod:`.redis`: used where the
#: server has Redis Functions, else the scripts run by ``EVALSHA``).
LIBRARY, FUNCTIONS = _library()
