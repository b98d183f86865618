-- The ADMIT script of agentscope_teams/usage/redis_lua.py before its counts (8368f56), as the
-- release before them runs it: tests/usage/test_in_flight.py runs it beside the scripts of now.
-- Its prelude (the time, the helpers, the arguments) is the one both releases share: the test
-- puts redis_lua._NOW, _HELPERS and _ARGS before this text.

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
if not limited then

local reserved = tokens .. ' ' .. nanos .. ' ' .. (now + ttl)
for i = 1, nb do
  local d = held[i]
  redis.call('HSET', KEYS[i], 'rt', int(d.rt + tokens), 'rn', int(d.rn + nanos), 'r:' .. rid, reserved)
end
return {0, '0'}
end

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

local reserved = tokens .. ' ' .. nanos .. ' ' .. (now + ttl)
for i = 1, nb do
  local d = held[i]
  redis.call('HSET', KEYS[i], 'rt', int(d.rt + tokens), 'rn', int(d.rn + nanos), 'r:' .. rid, reserved)
end

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
return {0, '0'}
