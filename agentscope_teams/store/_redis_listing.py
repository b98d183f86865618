"""Deleting and listing keys of :class:`~agentscope_teams.store.redis.RedisStore` (its indexes).

Expiry: an expired entry stays a member of its indexes until a ``list_keys`` meets it (listing
checks that each member's entry exists, then removes the member from every index of the key,
atomically, so a concurrent re-create is kept) or the key is deleted. On a Redis Cluster a prefix
shorter than its keys' tag is listed through its tag registry (:mod:`._redis_cluster`).
"""

from __future__ import annotations

from functools import partial
from typing import Any, cast

from ..errors import ConfigurationError, LeaseLostError, VersionConflict
from ._redis_conn import RedisConnection
from .base import (
    Fence,
    Key,
    decode_key,
    encode_key,
    encode_prefix,
    encode_segment,
    validate_key,
    validate_prefix,
)


class RedisListing(RedisConnection):
    """Deletes and listings; the entries' writes are in :class:`~.redis.RedisStore`."""

    _delete: Any
    _delete_fenced: Any
    _exists: Any

    async def delete(
        self,
        key: Key,
        *,
        expected_version: int | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> bool:
        k = self._check_delete(key, expected_version)
        f = self._check_delete_fence(k, fence)
        async with self._turn(reserve=not indexed):  # a lease is given back even when busy
            ok, found = await self._delete_script(k, expected_arg(expected_version), indexed, f)
        if ok < 0 and f is not None:
            raise LeaseLostError(k, f.key)
        if not ok:
            raise VersionConflict(k, expected_version, int(found))
        return int(found) > 0

    async def _delete_script(
        self, key: Key, expected: str, indexed: bool = True, fence: Fence | None = None
    ) -> tuple[int, int]:
        name, indexes, members = self._naming.of(key)
        if not indexed:
            indexes, members = [], []
        keys = [name, *indexes]
        args: list[str | bytes] = [expected, *members]
        script = self._delete
        if fence is not None:  # the fenced script: the check first, the fence key last
            keys.append(self._fence_name(key, name, fence.key))
            args += [bytes(fence.value), ""]
            script = self._delete_fenced
        with self._guard():
            ok, found = await self._write(script, keys, args)
        return int(ok), int(found)

    def _fence_name(self, key: Key, name: str, fence: Key) -> str:
        """The fence key's name; on a cluster it must share the written key's slot."""
        fence_name = self._naming.of(fence)[0]
        if self.cluster and self._client.keyslot(fence_name) != self._client.keyslot(name):
            raise ConfigurationError(
                f"the fence key {fence!r} is in another Redis Cluster hash slot than {key!r}; a "
                "fenced write needs both keys in one key-registry group (agentscope_teams.keys)"
            )
        return fence_name

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        self._check_page(limit)
        p = validate_prefix(prefix)
        a = None if after is None else validate_key(after, "after")
        async with self._turn():
            if self.cluster and self._naming.is_short(p):
                return await self._list_registry(p, limit, a)
            return await self._list_index(p, limit, a)

    async def _list_index(self, p: Key, limit: int, after: Key | None) -> list[Key]:
        """Keys below ``p`` from its index (every key below it shares one slot on a cluster)."""
        start = _range_start(encode_prefix(p), None if after is None else encode_key(after))
        prefix_enc = [encode_segment(s) for s in p]
        out: list[Key] = []
        while start is not None and len(out) < limit:
            batch = max(limit - len(out), 32)
            members = await self._members(self._naming.index(p), start, batch)
            # Entry names straight from the escaped members: no decode / re-encode round trip.
            names = [self._naming.encoded(prefix_enc + m.split("/")) for m in members]
            out.extend(await self._live([p + decode_key(m) for m in members], names))
            start = "(" + members[-1] if len(members) == batch else None
        return out[:limit]

    async def _list_registry(self, p: Key, limit: int, after: Key | None) -> list[Key]:
        """Keys below a short prefix ``p`` (cluster): its tag registry in order, each range member
        listed through its tag's index, single members checked to exist (stale ones skipped)."""
        start, resume = self._registry_start(p, after)
        registry = self._naming.registry(p)
        out: list[Key] = []
        while start is not None and len(out) < limit:
            batch = max(limit - len(out), 32)
            members = await self._members(registry, start, batch)
            singles: list[Key] = []
            for m in members:
                if not m.endswith("/"):
                    singles.append(p + decode_key(m))
                    continue
                out.extend(await self._existing(singles))
                singles = []
                tag = p + decode_key(m[:-1])
                from_ = resume if resume is not None and resume[: len(tag)] == tag else None
                out.extend(await self._list_index(tag, limit - len(out), from_))
                resume = None
                if len(out) >= limit:
                    return out[:limit]
            out.extend(await self._existing(singles))
            start = "(" + members[-1] if len(members) == batch else None
        return out[:limit]

    async def _members(self, index: str, start: str, batch: int) -> list[str]:
        """Up to ``batch`` members of sorted set ``index`` from ``start`` on (ZRANGEBYLEX)."""
        with self._guard():
            raw = await self._moving(partial(self._client.zrangebylex, index, start, "+", 0, batch))
        return [cast(bytes, m).decode() for m in raw]

    def _registry_start(self, p: Key, after: Key | None) -> tuple[str | None, Key | None]:
        """Where a registry listing of ``p`` starts after ``after``: the ZRANGEBYLEX start (None:
        nothing can follow) and the key to resume from inside the first range member."""
        if after is None:
            return "-", None
        start = _range_start(encode_prefix(p), encode_key(after))
        if start is None or start == "-":
            return start, None
        enc = [encode_segment(s) for s in after]
        n = self._naming.tag_length(enc)
        rel = "/".join(enc[len(p) : n])
        return ("[" + rel + "/", after) if len(enc) > n else ("(" + rel, None)

    async def _existing(self, keys: list[Key]) -> list[Key]:
        """The keys (of any slots) whose entries exist: one pipelined EXISTS each."""
        if not keys:
            return []
        with self._guard():
            found = await self._pipelined(
                lambda pipe: [pipe.exists(self._naming.name(k)) for k in keys]
            )
        return [k for k, n in zip(keys, found, strict=True) if n]

    async def _live(self, keys: list[Key], names: list[str]) -> list[Key]:
        """The keys whose entries exist; drops the index members of the others."""
        if not keys:
            return []
        with self._guard():
            exists = await self._moving(lambda: self._exists(keys=names))
        for k, alive in zip(keys, exists, strict=True):
            if not alive:
                await self._delete_script(k, "0")  # a no-op if the key was created meanwhile
        return [k for k, alive in zip(keys, exists, strict=True) if alive]


def expected_arg(expected_version: int | None) -> str:
    return "" if expected_version is None else str(expected_version)


def _range_start(prefix_enc: str, after_enc: str | None) -> str | None:
    """The ZRANGEBYLEX start in a prefix's index for keys after ``after``; None if none can be."""
    if after_enc is None:
        return "-"
    if after_enc.startswith(prefix_enc):
        return "(" + after_enc[len(prefix_enc) :]
    return "-" if after_enc < prefix_enc else None
