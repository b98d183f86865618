"""The rules of :mod:`.rules` as Lua scripts: each step of a model call is one Redis round trip.

Times come from the server's ``TIME`` (one clock for every process and host), in milliseconds.
A budget is a hash (``ut``, ``un``, ``rt``, ``rn`` and one ``r:<reservation>`` field of
``"tokens nanos expiry"`` per call in flight); a limiter is a hash (``tat``, ``ttat``, ``hold``,
``t:<tenant>`` = ``"tat seen"``, ``l:<lease>`` = expiry). Limits arrive as arguments, -1 meaning
none. Replies carry numbers as strings (Redis would truncate a Lua number to an integer).
"""

from __future__ import annotations

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""

RESERVE = (
    _NOW
    + """
local rid, tokens, nanos, ttl = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local docs = {}
for i, key in ipairs(KEYS) do
  local h = redis.call('HGETALL', key)
  local d = {ut = 0, un = 0, rt = 0, rn = 0}
  for j = 1, #h, 2 do
    local f, v = h[j], h[j + 1]
    if string.sub(f, 1, 2) == 'r:' then
      local rt, rn, exp = string.match(v, '(%S+) (%S+) (%S+)')
      if tonumber(exp) <= now then
        redis.call('HDEL', key, f)
        redis.call('HINCRBY', key, 'rt', 0 - tonumber(rt))
        redis.call('HINCRBY', key, 'rn', 0 - tonumber(rn))
        d.rt = d.rt - tonumber(rt)
        d.rn = d.rn - tonumber(rn)
      end
    else
      d[f] = d[f] + tonumber(v)
    end
  end
  local max_t, max_n = tonumber(ARGV[4 + 2 * i - 1]), tonumber(ARGV[4 + 2 * i])
  if max_t >= 0 and d.ut + d.rt >= max_t then
    return {i, 'tokens', tostring(max_t), tostring(d.ut + d.rt), tostring(d.ut)}
  end
  if max_n >= 0 and d.un + d.rn >= max_n then
    return {i, 'nanos', tostring(max_n), tostring(d.un + d.rn), tostring(d.un)}
  end
end
local held = tokens .. ' ' .. nanos .. ' ' .. (now + ttl)
for _, key in ipairs(KEYS) do
  redis.call('HINCRBY', key, 'rt', tokens)
  redis.call('HINCRBY', key, 'rn', nanos)
  redis.call('HSET', key, 'r:' .. rid, held)
end
return {0}
"""
)

SETTLE = """
local f, tokens, nanos = 'r:' .. ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
for _, key in ipairs(KEYS) do
  local held = redis.call('HGET', key, f)
  if held then
    local rt, rn = string.match(held, '(%S+) (%S+)')
    redis.call('HDEL', key, f)
    redis.call('HINCRBY', key, 'rt', 0 - tonumber(rt))
    redis.call('HINCRBY', key, 'rn', 0 - tonumber(rn))
  end
  redis.call('HINCRBY', key, 'ut', tokens)
  redis.call('HINCRBY', key, 'un', nanos)
end
return 1
"""

ACQUIRE = (
    _NOW
    + """
local key = KEYS[1]
local rpm, tpm, conc, burst = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local tenant, tokens, lease, ttl = ARGV[5], tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local h = redis.call('HGETALL', key)
local tat, ttat, hold = 0, 0, 0
local ten, leases, nten, nlease = {}, {}, 0, 0
for j = 1, #h, 2 do
  local f, v = h[j], h[j + 1]
  local kind, name = string.sub(f, 1, 2), string.sub(f, 3)
  if f == 'tat' then tat = tonumber(v)
  elseif f == 'ttat' then ttat = tonumber(v)
  elseif f == 'hold' then hold = tonumber(v)
  elseif kind == 't:' then
    local a, s = string.match(v, '(%S+) (%S+)')
    ten[name] = {tonumber(a), tonumber(s)}
    nten = nten + 1
  elseif kind == 'l:' then
    if tonumber(v) <= now then redis.call('HDEL', key, f)
    else leases[name] = true; nlease = nlease + 1 end
  end
end
local wait = math.max(0, hold - now)
local interval = 0
if rpm > 0 then
  interval = 60000 / rpm
  local window = math.max(1000, 3 * interval * math.max(nten, 1))
  for name, v in pairs(ten) do
    if v[2] < now - window then
      redis.call('HDEL', key, 't:' .. name)
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
if tpm > 0 then
  local cap, ahead = 60000 * burst / 6, math.max(ttat, now) - now
  local cost = tokens * 60000 / tpm
  if ahead > 0 and ahead + cost > cap then wait = math.max(wait, ahead + cost - cap) end
end
if conc > 0 and nlease >= conc then wait = math.max(wait, 50) end
if wait > 0 then
  if rpm > 0 then redis.call('HSET', key, 't:' .. tenant, ten[tenant][1] .. ' ' .. now) end
  return tostring(wait)
end
if rpm > 0 then
  redis.call('HSET', key, 'tat', math.max(tat, now) + interval)
  redis.call('HSET', key, 't:' .. tenant, (math.max(ten[tenant][1], now) + interval * nten) .. ' ' .. now)
end
if tpm > 0 then redis.call('HSET', key, 'ttat', math.max(ttat, now) + tokens * 60000 / tpm) end
if conc > 0 then redis.call('HSET', key, 'l:' .. lease, now + ttl) end
redis.call('PEXPIRE', key, 3600000)
return '0'
"""
)

RELEASE = (
    _NOW
    + """
local key, tpm, delta = KEYS[1], tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('HDEL', key, 'l:' .. ARGV[1])
if tpm > 0 and delta ~= 0 then
  local ttat = tonumber(redis.call('HGET', key, 'ttat') or '0')
  redis.call('HSET', key, 'ttat', math.max(ttat + delta * 60000 / tpm, now))
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
