"""A store written against the first ``BaseStore`` protocol (``put`` / ``delete`` without
``indexed=`` or ``fence=``) still serves an agent: leases are plain writes and each save is preceded
by a verify read instead of a fenced write."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.store import InMemoryStore
from agentscope_teams.store.base import Entry, Key, takes_write_options


class FirstProtocolStore:
    """Only the first protocol's signatures, shared across processes (so leases are taken)."""

    shared_across_processes = True

    def __init__(self) -> None:
        self.inner = InMemoryStore()
        self.calls: list[str] = []

    async def get(self, key: Key) -> Entry | None:
        self.calls.append("get")
        return await self.inner.get(key)

    async def put(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int | None = None,
        ttl: float | None = None,
    ) -> int:
        self.calls.append("put")
        return await self.inner.put(key, value, expected_version=expected_version, ttl=ttl)

    async def delete(self, key: Key, *, expected_version: int | None = None) -> bool:
        self.calls.append("delete")
        return await self.inner.delete(key, expected_version=expected_version)

    async def list_keys(self, prefix: Key, *, limit: int = 1000, after: Key | None = None) -> Any:
        return await self.inner.list_keys(prefix, limit=limit, after=after)

    async def append(self, stream: Key, value: bytes) -> int:
        return await self.inner.append(stream, value)

    async def read(self, stream: Key, *, after: int = 0, limit: int = 100) -> Any:
        return await self.inner.read(stream, after=after, limit=limit)

    async def delete_stream(self, stream: Key) -> bool:
        return await self.inner.delete_stream(stream)

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        return [await self.inner.get(k) for k in keys]

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> FirstProtocolStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def test_an_agent_runs_on_a_store_without_write_options() -> None:
    store = FirstProtocolStore()
    assert not takes_write_options(store) and takes_write_options(InMemoryStore())
    agent = HarnessAgent("a", ScriptedModel(["one", "two"]), store=store)  # type: ignore[arg-type]
    ctx = RuntimeContext(session_id="s", user_id="u")
    assert (await agent.call("hi", ctx)).get_text_content() == "one"
    store.calls.clear()
    assert (await agent.call("again", ctx)).get_text_content() == "two"
    # the lease was taken (put), the session read (get), the lease verified (get) before the save
    # (put), and the lease given back (delete)
    assert store.calls[:4] == ["put", "get", "get", "put"] and store.calls[-1] == "delete"
    assert len((await agent.get_agent_state(ctx)).context) == 4
