"""The Lua scripts of :mod:`.queue_redis`: the claim rule and the transitions, once, on Redis.

Every script starts with :data:`PRELUDE`. Keys: ``KEYS[1]`` the pending set (score: sequence,
member: task id), ``KEYS[2]`` the held set (score: lease expiry in ms, member: task id),
``KEYS[3]`` the owners set (score 0, member ``owner NUL seq NUL id``, read by lex range). Task
records are the store's entries (hash ``{v: JSON, n: version}``); a record's name is
``ARGV[1] .. id .. ARGV[2]`` (a template the store computed), in the same hash slot. ``ARGV[3]`` is
now in ms, ``ARGV[4]`` now as the records write it (ISO 8601). The rule mirrors
:func:`agentscope_teams.teams.eligibility.claim_verdict`; the history texts mirror
:mod:`agentscope_teams.teams.rules` (the board's conformance tests run both paths).

Replies: ``{1, json, version}`` written, ``{0, json, version}`` nothing to write, ``{-1, json,
version}`` refused (the board derives the error from the record), ``{-2}`` no such task;
``claim_next`` returns ``{1, ...}``, ``{0}`` (nothing claimable) or ``{2, offset}`` (scan limit
reached: call again from ``offset``).
"""

PRELUDE = r"""
local P, H, O = KEYS[1], KEYS[2], KEYS[3]
local BEFORE, AFTER = ARGV[1], ARGV[2]
local NOW, NOW_ISO = tonumber(ARGV[3]), ARGV[4]
local NULL = cjson.null

local function name_of(id) return BEFORE .. id .. AFTER end

local function decode(raw)
  local ok, t = pcall(cjson.decode, raw)
  if ok and type(t) == 'table' and type(t.history) == 'table' then return t end
  return nil
end

-- The record of id: (table or nil, raw or nil); an undecodable one is (nil, raw).
local function load(id)
  local raw = redis.call('HGET', name_of(id), 'v')
  if not raw then return nil, nil end
  return decode(raw), raw
end

local function iso(ms)
  local s = math.floor(ms / 1000)
  local frac = ms - s * 1000
  local days = math.floor(s / 86400)
  local rem = s - days * 86400
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
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d,
    math.floor(rem / 3600), math.floor(rem % 3600 / 60), rem % 60, frac)
end

-- cjson writes an empty list as {}: write those as [] by hand.
local function encode(t)
  local empties = {}
  for _, f in ipairs({'blocked_by', 'history'}) do
    if type(t[f]) == 'table' and next(t[f]) == nil then
      t[f] = nil
      empties[#empties + 1] = '"' .. f .. '":[]'
    end
  end
  local raw = cjson.encode(t)
  if #empties > 0 then
    local sep = (raw == '{}') and '' or ','
    raw = '{' .. table.concat(empties, ',') .. sep .. string.sub(raw, 2)
  end
  return raw
end

local function save(t)
  local raw = encode(t)
  local name = name_of(t.id)
  redis.call('HSET', name, 'v', raw)
  return {1, raw, redis.call('HINCRBY', name, 'n', 1)}
end

local function event(t, actor, action, detail)
  t.history[#t.history + 1] = {at = NOW_ISO, actor = actor, action = action, detail = detail}
  t.updated_at = NOW_ISO
end

local function q(s) return "'" .. s .. "'" end

local function owner_member(owner, t)
  return owner .. '\0' .. string.format('%020d', t.seq) .. '\0' .. t.id
end

-- Bring the indexes in step with t's state (status and owner as they are now).
local function unindex(t, owner)
  redis.call('ZREM', P, t.id)
  redis.call('ZREM', H, t.id)
  if owner ~= nil and owner ~= NULL then redis.call('ZREM', O, owner_member(owner, t)) end
end

local function held_until(t, until_ms)
  redis.call('ZADD', H, until_ms, t.id)
  redis.call('ZADD', O, 0, owner_member(t.owner, t))
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
    local waiting = false
    for _, b in ipairs(t.blocked_by) do
      local bt, raw = load(b)
      if raw == nil then return 'blocked' end
      if bt ~= nil then
        if bt.status == 'failed' or bt.status == 'cancelled' then return 'blocked' end
        if bt.status ~= 'completed' then waiting = true end
      else
        waiting = true  -- unreadable: counts as unfinished
      end
    end
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
    redis.call('ZADD', P, t.seq, t.id)
  end
end

-- rules.claimed: one more attempt, a fresh lease (seconds, ms).
local function claimed(t, member, lease, lease_ms)
  unindex(t, t.owner)
  t.attempts = t.attempts + 1
  event(t, member, 'claimed', string.format('attempt %d of %d', t.attempts, t.max_attempts))
  t.status, t.owner, t.lease_seconds = 'in_progress', member, lease
  t.lease_expires_at = iso(NOW + lease_ms)
  held_until(t, NOW + lease_ms)
  return save(t)
end

-- rules.renewed: the lease moved, no history entry.
local function renewed(t, lease)
  local until_ms = NOW + math.floor(lease * 1000 + 0.5)
  t.lease_seconds, t.lease_expires_at, t.updated_at = lease, iso(until_ms), NOW_ISO
  held_until(t, until_ms)
  return save(t)
end

local function refused(raw, id)
  return {-1, raw, redis.call('HGET', name_of(id), 'n')}
end

local function unchanged(raw, id)
  return {0, raw, redis.call('HGET', name_of(id), 'n')}
end
"""

#: ARGV[5] member, [6] lease s, [7] lease ms, [8] '1' prefer own, [9] offset, [10] scan limit.
CLAIM_NEXT = (
    PRELUDE
    + r"""
local member, lease, lease_ms = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
if ARGV[8] == '1' then
  local mine = redis.call('ZRANGEBYLEX', O, '[' .. member .. '\0', '(' .. member .. '\1')
  for _, m in ipairs(mine) do
    local id = string.match(m, '%z([^%z]*)$')
    local t = load(id)
    if t ~= nil and t.status == 'in_progress' and t.owner == member then
      return renewed(t, lease)
    end
    if t ~= nil or redis.call('EXISTS', name_of(id)) == 0 then redis.call('ZREM', O, m) end
  end
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', H, '-inf', NOW, 'LIMIT', 0, 8)) do
  local t, raw = load(id)
  if raw == nil then
    redis.call('ZREM', H, id)
  elseif t ~= nil then
    if t.status ~= 'in_progress' then
      redis.call('ZREM', H, id)
    else
      local v = verdict(t, member, false)
      if v == 'reclaim' then
        expire(t)
        return claimed(t, member, lease, lease_ms)
      end
      if v == 'exhausted' or v == 'assigned' then
        expire(t)
        save(t)
      end
    end
  end
end
-- The pending set, oldest first, a few ids per read (usually the first is claimable).
local offset, limit, step = tonumber(ARGV[9]), tonumber(ARGV[10]), 8
local seen = 0
while seen < limit do
  local ids = redis.call('ZRANGE', P, offset, offset + step - 1)
  for _, id in ipairs(ids) do
    local t, raw = load(id)
    if raw == nil or (t ~= nil and t.status ~= 'pending') then
      redis.call('ZREM', P, id)  -- stale: the next read starts one earlier
      offset = offset - 1
    elseif t ~= nil and verdict(t, member, false) == 'claim' then
      return claimed(t, member, lease, lease_ms)
    end
  end
  if #ids < step then return {0} end
  offset, seen = offset + step, seen + step
end
return {2, offset}
"""
)

#: ARGV[5] id, [6] member, [7] lease s, [8] lease ms.
CLAIM = (
    PRELUDE
    + r"""
local id, member, lease, lease_ms = ARGV[5], ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8])
local t, raw = load(id)
if raw == nil then return {-2} end
if t == nil then return refused(raw, id) end
local v = verdict(t, member, true)
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


def _owner_only(body: str) -> str:
    """A transition only the task's owner may make (rules.require_owner), then ``body``."""
    return (
        PRELUDE
        + r"""
local id, member = ARGV[5], ARGV[6]
local t, raw = load(id)
if raw == nil then return {-2} end
if t == nil then return refused(raw, id) end
"""
        + body
    )


_REQUIRE_OWNER = """
if t.status ~= 'in_progress' or t.owner ~= member then return refused(raw, id) end
"""

#: ARGV[7] status, [8] field (result / error), [9] text, [10] history detail.
#: ARGV[7] status, ARGV[8] the text's field, ARGV[9] the text, ARGV[10] the history detail,
#: ARGV[11] a completion's data as JSON text ('' = none), ARGV[12] '1' when the board checked it
#: against the task's result schema (a task declaring one is refused until then). Structured
#: fields travel as JSON text (``*_json``), so cjson never re-encodes them.
FINISH = _owner_only(
    r"""
local status = ARGV[7]
if t.status == status and t.owner == member then return unchanged(raw, id) end
"""
    + _REQUIRE_OWNER
    + r"""
if status == 'completed' then
  local schema = t.result_schema_json
  if schema ~= nil and schema ~= NULL and ARGV[12] ~= '1' then return refused(raw, id) end
  if ARGV[11] ~= '' then t.result_data_json = ARGV[11] end
end
unindex(t, t.owner)
event(t, member, status, ARGV[10])
t.status, t.lease_expires_at = status, NULL
t[ARGV[8]] = ARGV[9]
return save(t)
"""
)

RELEASE = _owner_only(
    _REQUIRE_OWNER
    + r"""
unindex(t, t.owner)
event(t, member, 'released', '')
t.status, t.owner, t.lease_expires_at = 'pending', NULL, NULL
redis.call('ZADD', P, t.seq, t.id)
return save(t)
"""
)

#: ARGV[7] lease s ('' = the task's own).
RENEW = _owner_only(
    _REQUIRE_OWNER
    + r"""
local lease = ARGV[7] == '' and t.lease_seconds or tonumber(ARGV[7])
return renewed(t, lease)
"""
)

#: ARGV[6] is the actor (anyone: the client checks the lead); ARGV[7] the reason.
CANCEL = _owner_only(
    r"""
if t.status == 'cancelled' then return unchanged(raw, id) end
if t.status ~= 'pending' and t.status ~= 'in_progress' then return refused(raw, id) end
unindex(t, t.owner)
event(t, member, 'cancelled', ARGV[7])
t.status, t.lease_expires_at = 'cancelled', NULL
t.error = (ARGV[7] == '') and NULL or ARGV[7]
return save(t)
"""
)

#: Every expired lease settled; replies a flat list of (json, version).
REAP = (
    PRELUDE
    + r"""
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', H, '-inf', NOW)) do
  local t, raw = load(id)
  if raw == nil then
    redis.call('ZREM', H, id)
  elseif t ~= nil and t.status == 'in_progress' then
    expire(t)
    local w = save(t)
    out[#out + 1] = w[2]
    out[#out + 1] = w[3]
  elseif t ~= nil then
    redis.call('ZREM', H, id)
  end
end
return out
"""
)

#: ARGV[5] '1' for the held set (else the pending set), [6] offset, [7] page size. Replies the
#: number of members read, then (id, json, version) of each whose record exists.
OPEN_PAGE = (
    PRELUDE
    + r"""
local set = ARGV[5] == '1' and H or P
local offset, limit = tonumber(ARGV[6]), tonumber(ARGV[7])
local ids = redis.call('ZRANGE', set, offset, offset + limit - 1)
local out = {#ids}
for _, id in ipairs(ids) do
  local name = name_of(id)
  local raw = redis.call('HGET', name, 'v')
  if raw then
    out[#out + 1] = id
    out[#out + 1] = raw
    out[#out + 1] = redis.call('HGET', name, 'n')
  end
end
return out
"""
)
