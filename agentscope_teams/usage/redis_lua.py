"""The rules of :mod:`.rules` as Lua scripts: each step of a model call is one Redis round trip.

A model call is two scripts: :data:`ADMIT` (reserve on its budgets and take a rate-limit turn, both or
neither) before it is sent, :data:`FINISH` (settle the budgets, end the lease) after it. Times come
from the server's ``TIME`` (one clock for every process and host), in milliseconds.
A budget is a hash (``ut``, ``un``, ``rt``, ``rn``, one ``r:<reservation>`` field of
``"tokens nanos expiry"`` per call in flight, and ``s:`` = ``"0 0 <at>"``: no reservation expires
before ``<at>``); a limiter is a hash (``tat``, ``ttat``, ``hold``, ``t:<tenant>`` = ``"tat seen"``,
``l:<lease>`` = expiry, ``last``: the last turn taken, ``px``: when its expiry was last pushed back;
``nt``: how many tenants, ``sx``: no lease expires before it, ``so``: no tenant was seen before it).
Limits arrive as arguments, -1 meaning none. Replies carry numbers as strings (Redis would truncate
a Lua number to an integer).

Each script reads a hash once and writes it once (a multi-field ``HSET`` of the values it worked
out, not one ``HINCRBY`` per field): inside a script each ``redis.call`` costs microseconds of
server time, and these run on every model call. ``ADMIT`` reads only the fields it needs
(``HMGET``; the limiter's live leases are its ``HLEN`` less its other fields, counted by ``nt`` and
the ``HMGET``), so its cost does not grow with the calls in flight or the tenants. It reads a whole
hash (``HGETALL``: expired reservations and leases and stale tenants deleted in one ``HDEL``, the
counts and times written again) only when something in it may have ended: ``s:`` or ``sx`` is past,
or with a requests limit ``so`` is older than the tenants' window. Those are the earliest expiry and
the oldest ``seen`` there can be, so nothing expired or stale is ever counted: every decision is the
one a read of the whole hash would make. Under a steady load a budget is read whole about once per
:data:`.rules.RESERVATION_TTL_MS`, a limiter with a requests limit and two or more tenants about
once per tenant window (1 s or more; more often when a tenant's turns come about a window apart).
A hash without these fields (written before them) is read whole at its first ``ADMIT``. To
scripts from before them ``s:`` reads as a reservation of nothing (reaped once due) and the others as
unknown fields, which they skip: processes of both versions can share the hashes during an upgrade
(tenants an older process adds or forgets are counted again at the next whole read).
"""

from __future__ import annotations

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

# hdel_all: delete ``fields`` (a list, maybe nil) of hash ``key``, in slices that fit Lua's stack;
# put: append a field and its value to an HSET's list; int: a count as an integer's digits (a Lua
# number past 10^17 would reach Redis as "1e+17", which HINCRBY cannot add to).
_HELPERS = """
local function hdel_all(key, fields)
  if not fields then return end
  for s = 1, #fields, 1000 do
    redis.call('HDEL', key, unpack(fields, s, math.min(s + 999, #fields)))
  end
end
local function put(set, f, v)
  set[#set + 1] = f
  set[#set + 1] = v
end
local function int(x)
  return string.format('%d', x)
end
"""

# KEYS: the budgets (ARGV[1] of them), then the limiter when ARGV[6] is 1.
# ARGV: nb, rid (also the lease), tokens, nanos, ttl, limited, rpm, tpm, conc, burst, tenant, -, then
# (max tokens, max nanos) per budget.
_ARGS = """
local nb, rid, tokens, nanos = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local ttl, limited = tonumber(ARGV[5]), ARGV[6] == '1'
local rpm, tpm, conc, burst = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local tenant, lease = ARGV[11], rid
"""

# A budget read whole (``d``: its totals and ``at``, the earliest expiry, as read): the expired
# reservations deleted and taken off the totals, ``at`` worked out again, both written.
_BUDGET_SCAN = """
local function scan_budget(key, d)
  local h = redis.call('HGETALL', key)
  local dead, at = nil, now + ttl
  for j = 1, #h, 2 do
    local f = h[j]
    if string.byte(f, 1) == 114 and string.byte(f, 2) == 58 then
      local rt, rn, exp = string.match(h[j + 1], '(%S+) (%S+) (%S+)')
      exp = tonumber(exp)
      if exp <= now then
        dead = dead or {}
        dead[#dead + 1] = f
        d.rt = d.rt - tonumber(rt)
        d.rn = d.rn - tonumber(rn)
      elseif exp < at then at = exp end
    end
  end
  hdel_all(key, dead)
  d.at = at
  redis.call('HSET', key, 'rt', int(d.rt), 'rn', int(d.rn), 's:', '0 0 ' .. at)
end
"""

# Refuse (return) unless every budget has something left. A budget is read whole first when one of
# its reservations may have expired, or it has none of ``s:`` yet (written before it). The totals
# each budget holds now are kept in ``held`` for the take.
_BUDGETS_CHECK = """
local held = {}
for i = 1, nb do
  local key = KEYS[i]
  local v = redis.call('HMGET', key, 'ut', 'un', 'rt', 'rn', 's:')
  local d = {ut = tonumber(v[1]) or 0, un = tonumber(v[2]) or 0, rt = tonumber(v[3]) or 0,
    rn = tonumber(v[4]) or 0}
  if v[5] then d.at = tonumber(string.sub(v[5], 5)) end
  if (d.at and d.at <= now) or (not d.at and (v[1] or v[3])) then scan_budget(key, d) end
  held[i] = d
  local max_t, max_n = tonumber(ARGV[12 + 2 * i - 1]), tonumber(ARGV[12 + 2 * i])
  if max_t >= 0 and d.ut + d.rt >= max_t then
    return {i, 'tokens', tostring(max_t), tostring(d.ut + d.rt), tostring(d.ut)}
  end
  if max_n >= 0 and d.un + d.rn >= max_n then
    return {i, 'nanos', tostring(max_n), tostring(d.un + d.rn), tostring(d.un)}
  end
end
"""

# The limiter read whole: expired leases and (with an rpm) stale tenants deleted, the tenants and
# leases counted, ``sx`` and ``so`` worked out again (written with the turn or the wait), the
# caller's tenant as kept.
_LIMITER_SCAN = """
local function scan_limiter(key, interval)
  local h = redis.call('HGETALL', key)
  local dead, ten = {}, {}
  local n, nl, at, oldest, own = 0, 0, now + ttl, nil, nil
  for j = 1, #h, 2 do
    local f = h[j]
    if string.byte(f, 2) == 58 then
      local kind = string.byte(f, 1)
      if kind == 116 then ten[#ten + 1] = j
      elseif kind == 108 then
        local exp = tonumber(h[j + 1])
        if exp <= now then dead[#dead + 1] = f
        else
          nl = nl + 1
          if exp < at then at = exp end
        end
      end
    end
  end
  local window = math.max(1000, 3 * interval * math.max(#ten, 1))
  for _, j in ipairs(ten) do
    local seen = tonumber(string.match(h[j + 1], '%S+ (%S+)'))
    if rpm > 0 and seen < now - window then dead[#dead + 1] = h[j]
    else
      n = n + 1
      if not oldest or seen < oldest then oldest = seen end
      if h[j] == 't:' .. tenant then own = h[j + 1] end
    end
  end
  hdel_all(key, dead)
  return n, nl, at, oldest or now, own
end
"""

# The turn: GCRA per request (overall and per tenant: the fair share), per token, and leases. The
# fixed fields and the caller's tenant are read; the whole hash only when a lease may have expired
# or (with an rpm) a tenant may be stale, or it has no ``sx`` yet. Live leases: the hash's length
# less its fixed fields and tenants. ``dirty``: ``nt``, ``sx`` and ``so`` to write; ``fresh``: ``so``
# (the caller's tenant, seen now, is the only one: a lone tenant is never read whole for being seen
# long ago). Waiting: only the tenant's "seen" time (and those) are written, and the script returns.
_LIMITER_CHECK = """
local key = KEYS[nb + 1]
local v = redis.call('HMGET', key, 'tat', 'ttat', 'hold', 'px', 'last', 'nt', 'sx', 'so', 't:' .. tenant)
local tat, ttat, hold, px = tonumber(v[1]) or 0, tonumber(v[2]) or 0, tonumber(v[3]) or 0, tonumber(v[4]) or 0
local nten, sx, so, mine = tonumber(v[6]) or 0, tonumber(v[7]), tonumber(v[8]), v[9]
local interval = 0
if rpm > 0 then interval = 60000 / rpm end
local nlease, hlen, dirty, fresh = nil, nil, false, false
local due
if sx then
  due = sx <= now or (rpm > 0 and so ~= nil
    and so < now - math.max(1000, 3 * interval * math.max(nten, 1)))
else
  hlen = redis.call('HLEN', key)
  due = hlen > 0
end
if due then
  nten, nlease, sx, so, mine = scan_limiter(key, interval)
  dirty = true
elseif not sx then
  nlease, sx, dirty = 0, now + ttl, true
end
local wait = math.max(0, hold - now)
local mtat = 0
if rpm > 0 then
  if mine then mtat = tonumber(string.match(mine, '(%S+)'))
  else nten, dirty = nten + 1, true end
  if not so or (nten == 1 and so < now) then so, fresh = now, true end
  local tau = interval * (burst - 1)
  wait = math.max(wait, math.max(tat, now) - now - tau)
  wait = math.max(wait, math.max(mtat, now) - now - interval * nten * (burst - 1))
end
if tpm > 0 then
  local cap, ahead = 60000 * burst / 6, math.max(ttat, now) - now
  local cost = tokens * 60000 / tpm
  if ahead > 0 and ahead + cost > cap then wait = math.max(wait, ahead + cost - cap) end
end
if conc > 0 then
  if not nlease then
    local fixed = 0
    for j = 1, 8 do if v[j] then fixed = fixed + 1 end end
    nlease = (hlen or redis.call('HLEN', key)) - fixed - (tonumber(v[6]) or 0)
  end
  if nlease >= conc then wait = math.max(wait, 50) end
end
local set = {}
local function counts()
  if dirty then
    put(set, 'nt', int(nten))
    put(set, 'sx', int(sx))
  end
  if so and (dirty or fresh) then put(set, 'so', so) end
end
if wait > 0 then
  if rpm > 0 then put(set, 't:' .. tenant, mtat .. ' ' .. now) end
  counts()
  if #set > 0 then redis.call('HSET', key, unpack(set)) end
  return {0, tostring(wait)}
end
"""

_BUDGETS_TAKE = """
local until_ = now + ttl
local reserved = tokens .. ' ' .. nanos .. ' ' .. until_
for i = 1, nb do
  local d = held[i]
  if d.at and d.at <= until_ then
    redis.call('HSET', KEYS[i], 'rt', int(d.rt + tokens), 'rn', int(d.rn + nanos), 'r:' .. rid, reserved)
  else
    redis.call('HSET', KEYS[i], 'rt', int(d.rt + tokens), 'rn', int(d.rn + nanos), 'r:' .. rid, reserved,
      's:', '0 0 ' .. until_)
  end
end
"""

# The turn, noted as ``last`` = "<tat moved> <tenant's tat moved> <ttat moved> <lease>" (FINISH's
# undo), in one HSET with the counts when they changed; the key's expiry is pushed back to an hour
# at most once a minute.
_LIMITER_TAKE = """
local moved = {0, 0, 0}
if rpm > 0 then
  local new_tat, own = math.max(tat, now) + interval, math.max(mtat, now) + interval * nten
  moved[1], moved[2] = new_tat - tat, own - mtat
  put(set, 'tat', new_tat)
  put(set, 't:' .. tenant, own .. ' ' .. now)
end
if tpm > 0 then
  local new_ttat = math.max(ttat, now) + tokens * 60000 / tpm
  moved[3] = new_ttat - ttat
  put(set, 'ttat', new_ttat)
end
if conc > 0 then
  put(set, 'l:' .. lease, now + ttl)
  if now + ttl < sx then sx, dirty = now + ttl, true end
end
put(set, 'last', string.format('%.17g %.17g %.17g ', moved[1], moved[2], moved[3]) .. lease)
counts()
local refresh = now - px >= 60000
if refresh then put(set, 'px', now) end
redis.call('HSET', key, unpack(set))
if refresh then redis.call('PEXPIRE', key, 3600000) end
"""

#: Reserve on every budget and take a turn, both or neither (:func:`.rules.admit`). Reply:
#: ``{i, unit, limit, used, settled}`` when budget ``i`` refuses, else ``{0, ms to wait}``.
ADMIT = (
    _NOW
    + _HELPERS
    + _ARGS
    + _BUDGET_SCAN
    + _BUDGETS_CHECK
    + "if not limited then\n"
    + _BUDGETS_TAKE
    + "return {0, '0'}\nend\n"
    + _LIMITER_SCAN
    + _LIMITER_CHECK
    + _BUDGETS_TAKE
    + _LIMITER_TAKE
    + "return {0, '0'}\n"
)

# An admission never sent (ARGV[8] is 1): undo its turn if it is still the last one taken
# (:func:`.rules.undo_turn`; ARGV[9]: its tenant).
_UNDO_TURN = """
if ARGV[8] == '1' then
  local v = redis.call('HMGET', key, 'last', 'tat', 't:' .. ARGV[9], 'ttat')
  local d_tat, d_ten, d_ttat, rid = string.match(v[1] or '', '(%S+) (%S+) (%S+) (.*)')
  if rid == ARGV[2] then
    redis.call('HDEL', key, 'last')
    local set = {'tat', (tonumber(v[2]) or 0) - tonumber(d_tat)}
    put(set, 'ttat', (tonumber(v[4]) or 0) - tonumber(d_ttat))
    if v[3] then
      local a, seen = string.match(v[3], '(%S+) (%S+)')
      put(set, 't:' .. ARGV[9], (tonumber(a) - tonumber(d_ten)) .. ' ' .. seen)
    end
    redis.call('HSET', key, unpack(set))
  end
end
"""

#: Settle the budgets (KEYS 1..ARGV[1]) and end the lease on the limiter (the next key, when
#: ARGV[6] is 1) (:func:`.rules.finish`); for an admission never sent (ARGV[8] is 1) also undo
#: its turn (:func:`.rules.give_back`). ARGV: nb, rid, used tokens, used nanos, estimated
#: tokens, limited, tpm, unsent, tenant, leased (1: the admission took a concurrency lease),
#: again (1: a resend of a ``FINISH`` whose reply was lost: it changes only what its
#: reservation (or, with no budget, its lease) still holds, so when the first one ran it
#: finds none and changes nothing: the use and the reservation's end are one atomic step).
#: The server's clock is read only when the token clock needs correcting. Reply: 1, or 0 when
#: a resend found nothing held (the first one ran, or the reservation expired).
FINISH = (
    _HELPERS
    + """
local nb, f, tokens, nanos = tonumber(ARGV[1]), 'r:' .. ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local again = ARGV[11] == '1'
local live = not again
for i = 1, nb do
  local key = KEYS[i]
  local v = redis.call('HMGET', key, f, 'ut', 'un', 'rt', 'rn')
  local rt, rn = tonumber(v[4]) or 0, tonumber(v[5]) or 0
  if v[1] then
    local ht, hn = string.match(v[1], '(%S+) (%S+)')
    redis.call('HDEL', key, f)
    rt, rn = rt - tonumber(ht), rn - tonumber(hn)
    live = true
  end
  if v[1] or not again then
    local ut, un = (tonumber(v[2]) or 0) + tokens, (tonumber(v[3]) or 0) + nanos
    redis.call('HSET', key, 'ut', int(ut), 'un', int(un), 'rt', int(rt), 'rn', int(rn))
  end
end
if again and nb == 0 and ARGV[10] == '1' then
  live = redis.call('HEXISTS', KEYS[1], 'l:' .. ARGV[2]) == 1
end
if not live then return 0 end
if ARGV[6] == '1' then
  local key, tpm = KEYS[nb + 1], tonumber(ARGV[7])
  local delta = 0
  if tokens > 0 then delta = tokens - tonumber(ARGV[5]) end
  if ARGV[10] == '1' then redis.call('HDEL', key, 'l:' .. ARGV[2]) end
  if tpm > 0 and delta ~= 0 then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    local ttat = tonumber(redis.call('HGET', key, 'ttat') or '0')
    redis.call('HSET', key, 'ttat', math.max(ttat + delta * 60000 / tpm, now))
  end
"""
    + _UNDO_TURN
    + """
end
return 1
"""
)

#: :func:`.rules.renew`: the reservation ``r:<rid>`` on each budget (KEYS 1..ARGV[1]) and, when
#: ARGV[4] is 1, the lease ``l:<rid>`` on the limiter (the next key) end ARGV[3] ms from now, if
#: still held. ARGV: nb, rid, ttl, leased. (``s:`` and ``sx`` stay lower bounds of the expiries.)
RENEW = (
    _NOW
    + """
local nb, rid = tonumber(ARGV[1]), ARGV[2]
local until_ = now + tonumber(ARGV[3])
for i = 1, nb do
  local v = redis.call('HGET', KEYS[i], 'r:' .. rid)
  if v then
    local t, n = string.match(v, '(%S+) (%S+)')
    redis.call('HSET', KEYS[i], 'r:' .. rid, t .. ' ' .. n .. ' ' .. until_)
  end
end
if ARGV[4] == '1' and redis.call('HEXISTS', KEYS[nb + 1], 'l:' .. rid) == 1 then
  redis.call('HSET', KEYS[nb + 1], 'l:' .. rid, until_)
end
return 1
"""
)

HOLD_OFF = (
    _NOW
    + """
local hold = tonumber(redis.call('HGET', KEYS[1], 'hold') or '0')
redis.call('HSET', KEYS[1], 'hold', math.max(hold, now + tonumber(ARGV[1])))
redis.call('PEXPIRE', KEYS[1], 3600000)
return 1
"""
)
