"""Fixtures of the agent tests: store arguments a child process can reopen, and a Setup factory."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.store import RedisStore

from ..backends import REDIS_URL, unique_namespace
from ..conftest import require_service
from .helpers import Setup, StoreArgs

SetupFactory = Callable[..., Setup]


async def _drop_redis_namespace(namespace: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(REDIS_URL)
    try:
        keys = [k async for k in client.scan_iter(match=f"{namespace}:*", count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


@pytest.fixture
async def redis_args() -> AsyncIterator[StoreArgs]:
    require_service("redis")
    args = StoreArgs(REDIS_URL, namespace=unique_namespace())
    yield args
    assert args.namespace is not None
    await _drop_redis_namespace(args.namespace)


@pytest.fixture
def file_args(tmp_path: Path) -> StoreArgs:
    return StoreArgs(f"file://{tmp_path / 'store'}")


@pytest.fixture(params=["file", "redis"])
async def shared_args(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreArgs]:
    """A store several processes share: the file store and Redis."""
    if request.param == "file":
        yield StoreArgs(f"file://{tmp_path / 'store'}")
        return
    require_service("redis")
    args = StoreArgs(REDIS_URL, namespace=unique_namespace())
    yield args
    assert args.namespace is not None
    await _drop_redis_namespace(args.namespace)


@pytest.fixture
def make_setup(tmp_path: Path) -> SetupFactory:
    """``make_setup(store_args, **overrides)``: a Setup with a fresh session and workspace."""

    def make(store: StoreArgs, **overrides: Any) -> Setup:
        fields: dict[str, Any] = {
            "store": store,
            "workspace": tmp_path / "workspace",
            "session_id": "s-" + uuid.uuid4().hex[:8],
            "log": tmp_path / "log.jsonl",
        }
        fields.update(overrides)
        return Setup(**fields)

    return make


@pytest.fixture
async def redis_store() -> AsyncIterator[RedisStore]:
    """A RedisStore on the shared Redis in a namespace of its own, dropped after the test."""
    require_service("redis")
    namespace = unique_namespace()
    async with RedisStore(REDIS_URL, namespace=namespace) as store:
        yield store
    await _drop_redis_namespace(namespace)
