from __future__ import annotations

import inspect
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentscope_teams.store import StoreBackend

from .backends import (
    ALL_BACKENDS,
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


@pytest.fixture(params=ALL_BACKENDS)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    require_service(request.param)
    return make_spec(request.param, tmp_path)


@pytest.fixture
async def store(store_spec: StoreSpec) -> AsyncIterator[StoreBackend]:
    async with store_spec.open() as s:
        yield s


@pytest.fixture
def ns() -> str:
    return unique_namespace()
