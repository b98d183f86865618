"""The Lua scripts of :class:`~agentscope_teams.store.redis.RedisStore`: conditional writes, the
index updates that go with them, the fenced variants, listing checks and stream appends.

Every script declares every key it touches in ``KEYS`` (Redis Cluster routes and refuses it by
them; ``docs/redis-cluster.md``, "Slot migration").
"""

from __future__ import annotations

# The fragments the conditional writes share (KEYS[1]: the entry; ARGV[1]: the expected version,
# ARGV[2]: the value, ARGV[3]: the ttl in ms, '' = none), composed into each script below.
# The entry's version (0: absent) as `found`.
_FOUND = "local found = tonumber(redis.call('HGET', KEYS[1], 'n') or '0')\n"
# Refuse unless `found` is the expected version; `_EXPECTED_OR_ANY`: or ARGV[1] is '' (any).
_EXPECTED = "if tonumber(ARGV[1]) ~= found then return {0, found} end\n"
_EXPECTED_OR_ANY = "if ARGV[1] ~= '' and tonumber(ARGV[1]) ~= found then return {0, found} end\n"
# The entry's next version, as `version`; `_WRITE`: with ARGV[2] as its value.
_NEXT = "local version = redis.call('HINCRBY', KEYS[1], 'n', 1)\n"
_WRITE = _NEXT + "redis.call('HSET', KEYS[1], 'v', ARGV[2])\n"
# The entry expires in ARGV[3] ms, or never ('': an existing entry's expiry is removed).
_TTL = """if ARGV[3] ~= '' then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
elseif found > 0 then
  redis.call('PERSIST', KEYS[1])
end
"""
_DONE = "return {1, version}\n"

# KEYS: entry, ancestor indexes. ARGV: expected ('' = any), value, ttl ms ('' = none), members.
_INDEX = """if found == 0 then
  for i = 2, #KEYS do redis.call('ZADD', KEYS[i], 0, ARGV[i + 2]) end
end
"""
PUT = _FOUND + _EXPECTED_OR_ANY + _WRITE + _TTL + _INDEX + _DONE

# The CAS of an existing entry (expected version > 0): it never creates the entry, so it needs no
# index keys (half the arguments to send). KEYS: entry. ARGV: expected, value, ttl ms ('' = none).
UPDATE = _FOUND + _EXPECTED + _WRITE + _TTL + _DONE

# UPDATE that also sets fields beside the value and deletes others (a record rewritten in part).
# KEYS: entry. ARGV: expected, value, ttl ms ('' = none), number of fields to set, number of
# fields that must exist, their names, the (name, value) pairs to set, then the names to delete.
# A field to keep that is absent refuses the write as a conflict: at the expected version the
# entry is not the one the writer read (deleted and created again: versions restart).
_KEEP = """local last = #ARGV
local first = 6 + tonumber(ARGV[5])
for i = 6, first - 1 do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 0 then return {0, found} end
end
"""
_FIELDS = """local after = first + 2 * tonumber(ARGV[4])
for i = first, after - 1, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
for i = after, last do redis.call('HDEL', KEYS[1], ARGV[i]) end
"""
UPDATE_FIELDS = _FOUND + _EXPECTED + _KEEP + _WRITE + _FIELDS + _TTL + _DONE

# KEYS: entry, ancestor indexes. ARGV: expected ('' = any), members. An absent entry's members are
# removed too: that is how stale index members of expired entries are cleaned (expected '0').
DELETE = (
    _FOUND
    + _EXPECTED_OR_ANY
    + """redis.call('DEL', KEYS[1])
for i = 2, #KEYS do redis.call('ZREM', KEYS[i], ARGV[i]) end
return {1, found}
"""
)

# Fenced variants: the fence key is the last of KEYS; the last two ARGV are the value the fence key
# must hold and '1' to delete the fence key (release) once the write succeeded. The check comes
# first: a lost fence returns {-1, 0} and writes nothing.
_FENCE_CHECK = """
local fence = KEYS[#KEYS]
if redis.call('HGET', fence, 'v') ~= ARGV[#ARGV - 1] then return {-1, 0} end
"""
_FENCE_RELEASE = "if ARGV[#ARGV] == '1' then redis.call('DEL', fence) end\n"


def fenced(script: str) -> str:
    body = script.replace("for i = 2, #KEYS do", "for i = 2, #KEYS - 1 do")
    assert body.count(_DONE) == 1
    return _FENCE_CHECK + body.replace(_DONE, _FENCE_RELEASE + _DONE)


# DELETE fenced: KEYS: entry, ancestor indexes, fence key. ARGV: expected ('' = any), members,
# the fence key's value, '' (a delete never releases; the slot keeps the fenced layout). The fence
# key may be the entry itself (a lease given back by its holder): {-1, 0} unless it holds the value.
DELETE_FENCED = _FENCE_CHECK + DELETE.replace("for i = 2, #KEYS do", "for i = 2, #KEYS - 1 do")
PUT_FENCED = fenced(PUT)
UPDATE_FENCED = fenced(UPDATE)
UPDATE_FIELDS_FENCED = fenced(UPDATE_FIELDS).replace("local last = #ARGV", "local last = #ARGV - 2")

# Create an unindexed entry (a lease) and read another entry (the record it guards) after it, in
# one atomic command. KEYS: created entry, read entry. ARGV: value, ttl ms.
# Returns {0, found version} when the entry exists, else {1, version, read value, read version}.
CREATE_THEN_GET = (
    _FOUND
    + "if found ~= 0 then return {0, found} end\n"
    + _NEXT
    + """redis.call('HSET', KEYS[1], 'v', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local read = redis.call('HMGET', KEYS[2], 'v', 'n')
return {1, version, read[1], read[2]}
"""
)

# KEYS: entries. Whether each exists, in one command (listing checks a page of index members).
EXISTS = """
local out = {}
for i = 1, #KEYS do out[i] = redis.call('EXISTS', KEYS[i]) end
return out
"""

# KEYS: stream, counter. ARGV: value.
APPEND = """
local seq = redis.call('INCR', KEYS[2])
redis.call('XADD', KEYS[1], string.format('0-%d', seq), 'v', ARGV[1])
return seq
"""


SCRIPTS = (
    PUT,
    UPDATE,
    DELETE,
    DELETE_FENCED,
    EXISTS,
    APPEND,
    PUT_FENCED,
    UPDATE_FENCED,
    UPDATE_FIELDS,
    UPDATE_FIELDS_FENCED,
    CREATE_THEN_GET,
)
