"""One store operation per step of a model call: reserve / settle a budget, acquire / release a
rate-limit turn. :func:`usage_backend` picks Redis scripts or locked documents (:mod:`.docs`)."""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from . import redis_lua, rules
from .docs import DocBackend, doc_id, docs_for
from .rules import Limit, Rates, Refusal

if TYPE_CHECKING:
    from ..store.redis import RedisStore


class UsageBackend(Protocol):
    """The atomic operations budgets and rate limits need of a store."""

    async def reserve(
        self, limits: Sequence[Limit], rid: str, tokens: int, nanos: int
    ) -> Refusal | None: ...

    async def settle(self, names: Sequence[str], rid: str, tokens: int, nanos: int) -> None: ...

    async def acquire(
        self, key: str, rates: Rates, tenant: str, tokens: int, lease: str
    ) -> float: ...

    async def release(self, key: str, rates: Rates, lease: str, token_delta: int) -> None: ...

    async def hold_off(self, key: str, wait_ms: float) -> None: ...

    async def read(self, name: str) -> rules.Doc | None: ...


def _now() -> int:
    return int(time.time() * 1000)


class DocsUsage:
    """The rules of :mod:`.rules` on locked documents (memory, file, SQL stores)."""

    def __init__(self, docs: DocBackend) -> None:
        self.docs = docs

    async def reserve(
        self, limits: Sequence[Limit], rid: str, tokens: int, nanos: int
    ) -> Refusal | None:
        def change(
            docs: dict[str, rules.Doc | None],
        ) -> tuple[dict[str, rules.Doc], Refusal | None]:
            return rules.reserve(docs, list(limits), rid, tokens, nanos, _now())

        return await self.docs.update("reserve budget", [b.name for b in limits], change)

    async def settle(self, names: Sequence[str], rid: str, tokens: int, nanos: int) -> None:
        def change(docs: dict[str, rules.Doc | None]) -> tuple[dict[str, rules.Doc], None]:
            return rules.settle(docs, rid, tokens, nanos), None

        await self.docs.update("settle budget", names, change)

    async def acquire(self, key: str, rates: Rates, tenant: str, tokens: int, lease: str) -> float:
        def change(docs: dict[str, rules.Doc | None]) -> tuple[dict[str, rules.Doc], float]:
            doc, wait = rules.acquire(docs[key], rates, float(_now()), tenant, tokens, lease)
            return {key: doc}, wait

        return await self.docs.update("acquire rate limit", [key], change)

    async def release(self, key: str, rates: Rates, lease: str, token_delta: int) -> None:
        def change(docs: dict[str, rules.Doc | None]) -> tuple[dict[str, rules.Doc], None]:
            return {key: rules.release(docs[key], rates, float(_now()), lease, token_delta)}, None

        await self.docs.update("release rate limit", [key], change)

    async def hold_off(self, key: str, wait_ms: float) -> None:
        def change(docs: dict[str, rules.Doc | None]) -> tuple[dict[str, rules.Doc], None]:
            return {key: rules.hold_off(docs[key], float(_now()), wait_ms)}, None

        await self.docs.update("hold off rate limit", [key], change)

    async def read(self, name: str) -> rules.Doc | None:
        def change(
            docs: dict[str, rules.Doc | None],
        ) -> tuple[dict[str, rules.Doc], rules.Doc | None]:
            return {}, docs[name]

        return await self.docs.update("read usage", [name], change)


class RedisUsage:
    """The same rules as Lua scripts: one round trip each. Every budget hash shares one hash tag
    (the key prefix ``usage/ledger/budgets``), so a call's budgets are one script on a cluster."""

    def __init__(self, store: RedisStore) -> None:
        self.store = store
        self._reserve = store.register_script(redis_lua.RESERVE)
        self._settle = store.register_script(redis_lua.SETTLE)
        self._acquire = store.register_script(redis_lua.ACQUIRE)
        self._release = store.register_script(redis_lua.RELEASE)
        self._hold = store.register_script(redis_lua.HOLD_OFF)

    def _budget(self, name: str) -> str:
        return self.store.redis_name(("usage", "ledger", "budgets", doc_id(name)))

    def _limiter(self, key: str) -> str:
        return self.store.redis_name(("usage", "limits", doc_id(key)))

    async def reserve(
        self, limits: Sequence[Limit], rid: str, tokens: int, nanos: int
    ) -> Refusal | None:
        args: list[object] = [rid, tokens, nanos, rules.RESERVATION_TTL_MS]
        for b in limits:
            args += [-1 if b.max_tokens is None else b.max_tokens]
            args += [-1 if b.max_nanos is None else b.max_nanos]
        keys = [self._budget(b.name) for b in limits]
        reply = await self.store.run_script(self._reserve, keys, args)
        if int(reply[0]) == 0:
            return None
        unit = reply[1].decode() if isinstance(reply[1], bytes) else str(reply[1])
        at = limits[int(reply[0]) - 1]
        numbers = [int(float(x)) for x in reply[2:5]]
        return Refusal(at.name, unit, *numbers)

    async def settle(self, names: Sequence[str], rid: str, tokens: int, nanos: int) -> None:
        keys = [self._budget(n) for n in names]
        await self.store.run_script(self._settle, keys, [rid, tokens, nanos])

    async def acquire(self, key: str, rates: Rates, tenant: str, tokens: int, lease: str) -> float:
        args: list[object] = [rates.rpm or 0, rates.tpm or 0, rates.concurrent or 0, rates.burst]
        args += [tenant, tokens, lease, rules.RESERVATION_TTL_MS]
        reply = await self.store.run_script(self._acquire, [self._limiter(key)], args)
        return float(reply)

    async def release(self, key: str, rates: Rates, lease: str, token_delta: int) -> None:
        args: list[object] = [lease, rates.tpm or 0, token_delta]
        await self.store.run_script(self._release, [self._limiter(key)], args)

    async def hold_off(self, key: str, wait_ms: float) -> None:
        await self.store.run_script(self._hold, [self._limiter(key)], [wait_ms])

    async def read(self, name: str) -> rules.Doc | None:
        raw = await self.store.call(lambda c: c.hgetall(self._budget(name)))
        if not raw:
            return None
        fields = {(k.decode() if isinstance(k, bytes) else k): v for k, v in raw.items()}
        return {f: int(fields.get(f, 0)) for f in ("ut", "un", "rt", "rn")}


_BACKENDS: weakref.WeakKeyDictionary[object, UsageBackend] = weakref.WeakKeyDictionary()


def usage_backend(store: object) -> UsageBackend:
    """The usage backend of ``store`` (one per store object)."""
    found = _BACKENDS.get(store)
    if found is None:
        redis = _is_redis(store)
        found = RedisUsage(store) if redis else DocsUsage(docs_for(store))  # type: ignore[arg-type]
        _BACKENDS[store] = found
    return found


def _is_redis(store: object) -> bool:
    try:
        from ..store.redis import RedisStore
    except ImportError:  # pragma: no cover - the redis extra is not installed
        return False
    return isinstance(store, RedisStore)
