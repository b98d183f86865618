from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import BaseStore, StoreBackend, store_from_url

from ._redis_cluster import LocalCluster, cluster_binaries
from .backends import (
    ALL_BACKENDS,
    REDIS_CLUSTER_URL,
    REDIS_URL,
    REQUIRE_SERVICES,
    SERVICE_URLS,
    StoreSpec,
    make_spec,
    service_reachable,
    unique_namespace,
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str, obj: object) -> None:
    """Mark every ``async def test_*`` for anyio before anyio's plugin parametrizes it."""
    if name.startswith("test") and inspect.iscoroutinefunction(obj):
        pytest.mark.anyio(obj)


def require_service(backend: str) -> None:
    """Skip (or fail in CI) when the backend's server is unreachable."""
    url = SERVICE_URLS.get(backend)
    if url is None or service_reachable(url):
        return
    msg = f"{backend} server at {url} is unreachable"
    if REQUIRE_SERVICES:
        pytest.fail(msg + " and AGENTSCOPE_TEAMS_REQUIRE_SERVICES=1 forbids skipping")
    pytest.skip(msg)


def start_cluster(workdir: Path) -> LocalCluster:
    """A fresh 6-node Redis Cluster; skips (fails in CI) when redis-server is not installed."""
    if cluster_binaries() is None:
        msg = "redis-server / redis-cli are not installed, so no Redis Cluster can be started"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and AGENTSCOPE_TEAMS_REQUIRE_SERVICES=1 forbids skipping")
        pytest.skip(msg)
    pytest.importorskip("redis")
    cluster = LocalCluster(workdir)
    cluster.start()
    return cluster


@pytest.fixture(scope="session")
def redis_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Redis Cluster shared by the whole run (started once, stopped at the end)."""
    if REDIS_CLUSTER_URL:
        yield REDIS_CLUSTER_URL
        return
    cluster = start_cluster(tmp_path_factory.mktemp("redis-cluster"))
    try:
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture(params=ALL_BACKENDS)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    if request.param == "redis-cluster":
        return make_spec(request.param, tmp_path, request.getfixturevalue("redis_cluster_url"))
    require_service(request.param)
    return make_spec(request.param, tmp_path)


@pytest.fixture
async def store(store_spec: StoreSpec) -> AsyncIterator[StoreBackend]:
    async with store_spec.open() as s:
        yield s


@pytest.fixture
def ns() -> str:
    return unique_namespace()


@pytest.fixture
async def redis() -> AsyncIterator[BaseStore]:
    """The shared Redis server as a store (skipped, or failed under CI, when it is down)."""
    require_service("redis")
    async with store_from_url(REDIS_URL) as store:
        yield store


@pytest.fixture
def ctx() -> RuntimeContext:
    """A lead's context in an org of its own."""
    return RuntimeContext(session_id="s-lead", user_id="alice", org_id=unique_namespace())
