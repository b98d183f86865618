"""The rules of :mod:`.rules` as Lua scripts: each step of a model call is one Redis round trip.

A model call is two scripts: :data:`ADMIT` (reserve on its budgets and take a rate-limit turn, both or
neither) before it is sent, :data:`FINISH` (settle the budgets, end the lease) after it. Times come
from the server's ``TIME`` (one clock for every process and host), in milliseconds.
A budget is a hash (``ut``, ``un``, ``rt``, ``rn`` and one ``r:<reservation>`` field of
``"tokens nanos expiry"`` per call in flight); a limiter is a hash (``tat``, ``ttat``, ``hold``,
``t:<tenant>`` = ``"tat seen"``, ``l:<lease>`` = expiry, ``last``: the last turn taken, ``px``:
when its expiry was last pushed back). Limits arrive as arguments, -1 meaning none. Replies carry
numbers as strings (Redis would truncate a Lua number to an integer).

Each script reads a hash once and writes it once (a multi-field ``HSET`` of the values it worked
out, not one ``HINCRBY`` per field): inside a script each ``redis.call`` costs microseconds of
server time, and these run on every model call. Expired reservations, leases and stale tenants
are deleted in one ``HDEL`` when there are any.
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

# Refuse (return) unless every budget has something left; expired reservations are reaped. The
# totals each budget holds now are kept in ``held`` for the take.
_BUDGETS_CHECK = """
local held = {}
for i = 1, nb do
  local key = KEYS[i]
  local h = redis.call('HGETALL', key)
  local d = {ut = 0, un = 0, rt = 0, rn = 0}
  local dead = nil
  for j = 1, #h, 2 do
    local f, v = h[j], h[j + 1]
    if string.byte(f, 2) == 58 then
      local rt, rn, exp = string.match(v, '(%S+) (%S+) (%S+)')
      if tonumber(exp) <= now then
        dead = dead or {}
        dead[#dead + 1] = f
        d.rt = d.rt - tonumber(rt)
        d.rn = d.rn - tonumber(rn)
      end
    else
      d[f] = d[f] + tonumber(v)
    end
  end
  if dead then
    hdel_all(key, dead)
    redis.call('HSET', key, 'rt', int(d.rt), 'rn', int(d.rn))
  end
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

# The turn: GCRA per request (overall and per tenant: the fair share), per token, and leases.
# Waiting: only the tenant's "seen" time is written, and the script returns.
_LIMITER_CHECK = """
local key = KEYS[nb + 1]
local h = redis.call('HGETALL', key)
local tat, ttat, hold, px = 0, 0, 0, 0
local ten, nten, nlease = {}, 0, 0
local dead = nil
for j = 1, #h, 2 do
  local f, v = h[j], h[j + 1]
  local kind = string.byte(f, 2) == 58 and string.byte(f, 1) or 0
  if f == 'tat' then tat = tonumber(v)
  elseif f == 'ttat' then ttat = tonumber(v)
  elseif f == 'hold' then hold = tonumber(v)
  elseif f == 'px' then px = tonumber(v)
  elseif kind == 116 then
    local a, s = string.match(v, '(%S+) (%S+)')
    ten[string.sub(f, 3)] = {tonumber(a), tonumber(s)}
    nten = nten + 1
  elseif kind == 108 then
    if tonumber(v) <= now then
      dead = dead or {}
      dead[#dead + 1] = f
    else nlease = nlease + 1 end
  end
end
local wait = math.max(0, hold - now)
local interval = 0
if rpm > 0 then
  interval = 60000 / rpm
  local window = math.max(1000, 3 * interval * math.max(nten, 1))
  for name, v in pairs(ten) do
    if v[2] < now - window then
      dead = dead or {}
      dead[#dead + 1] = 't:' .. name
      ten[name] = nil
      nten = nten - 1
    end
  end
  if not ten[tenant] then ten[tenant] = {0, now}; nten = nten + 1 end
  ten[tenant][2] = now
  local tau = interval * (burst - 1)
  wait = math.max(wait, math.max(tat, now) - now - tau)
  wait = math.max(wait, math.max(ten[tenant][1], now) - now - interval * nten * (burst - 1))
end
hdel_all(key, dead)
if tpm > 0 then
  local cap, ahead = 60000 * burst / 6, math.max(ttat, now) - now
  local cost = tokens * 60000 / tpm
  if ahead > 0 and ahead + cost > cap then wait = math.max(wait, ahead + cost - cap) end
end
if conc > 0 and nlease >= conc then wait = math.max(wait, 50) end
if wait > 0 then
  if rpm > 0 then redis.call('HSET', key, 't:' .. tenant, ten[tenant][1] .. ' ' .. now) end
  return {0, tostring(wait)}
end
"""

_BUDGETS_TAKE = """
local reserved = tokens .. ' ' .. nanos .. ' ' .. (now + ttl)
for i = 1, nb do
  local d = held[i]
  redis.call('HSET', KEYS[i], 'rt', int(d.rt + tokens), 'rn', int(d.rn + nanos), 'r:' .. rid, reserved)
end
"""

# The turn, noted as ``last`` = "<tat moved> <tenant's tat moved> <ttat moved> <lease>" (FINISH's
# undo), in one HSET; the key's expiry is pushed back to an hour at most once a minute.
_LIMITER_TAKE = """
local moved = {0, 0, 0}
local set = {}
if rpm > 0 then
  local new_tat, mine = math.max(tat, now) + interval, math.max(ten[tenant][1], now) + interval * nten
  moved[1], moved[2] = new_tat - tat, mine - ten[tenant][1]
  put(set, 'tat', new_tat)
  put(set, 't:' .. tenant, mine .. ' ' .. now)
end
if tpm > 0 then
  local new_ttat = math.max(ttat, now) + tokens * 60000 / tpm
  moved[3] = new_ttat - ttat
  put(set, 'ttat', new_ttat)
end
if conc > 0 then put(set, 'l:' .. lease, now + ttl) end
put(set, 'last', string.format('%.17g %.17g %.17g ', moved[1], moved[2], moved[3]) .. lease)
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
    + _BUDGETS_CHECK
    + "if not limited then\n"
    + _BUDGETS_TAKE
    + "return {0, '0'}\nend\n"
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
#: tokens, limited, tpm, unsent, tenant, leased (1: the admission took a concurrency lease).
#: The server's clock is read only when the token clock needs correcting.
FINISH = (
    _HELPERS
    + """
local nb, f, tokens, nanos = tonumber(ARGV[1]), 'r:' .. ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
for i = 1, nb do
  local key = KEYS[i]
  local v = redis.call('HMGET', key, f, 'ut', 'un', 'rt', 'rn')
  local rt, rn = tonumber(v[4]) or 0, tonumber(v[5]) or 0
  if v[1] then
    local ht, hn = string.match(v[1], '(%S+) (%S+)')
    redis.call('HDEL', key, f)
    rt, rn = rt - tonumber(ht), rn - tonumber(hn)
  end
  local ut, un = (tonumber(v[2]) or 0) + tokens, (tonumber(v[3]) or 0) + nanos
  redis.call('HSET', key, 'ut', int(ut), 'un', int(un), 'rt', int(rt), 'rn', int(rn))
end
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

HOLD_OFF = (
    _NOW
    + """
local hold = tonumber(redis.call('HGET', KEYS[1], 'hold') or '0')
redis.call('HSET', KEYS[1], 'hold', math.max(hold, now + tonumber(ARGV[1])))
redis.call('PEXPIRE', KEYS[1], 3600000)
return 1
"""
)
