"""Which board path a test runs on: every backend on its generic path, and the backends with a
native queue (:mod:`agentscope_teams.teams.queues`) on that too.

A module that imports :func:`both_paths` or :func:`generic_path` (the generic path only, for tests
of the generic index entries) overrides the conftest's ``store_spec`` fixture with it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentscope_teams.teams.queues.base import NATIVE_ENV

from ..backends import ALL_BACKENDS, StoreSpec, make_spec
from ..conftest import require_service

#: Backends whose board has a native queue.
NATIVE_BACKENDS = ("redis", "redis-cluster", "postgres", "mariadb")
BOARD_PATHS = [(b, "generic") for b in ALL_BACKENDS] + [(b, "native") for b in NATIVE_BACKENDS]


def _spec(request: pytest.FixtureRequest, backend: str, path: str, tmp_path: Path) -> StoreSpec:
    require_service(backend)
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv(NATIVE_ENV, "1" if path == "native" else "0")
    if backend == "redis-cluster":
        return make_spec(backend, tmp_path, request.getfixturevalue("redis_cluster_url"))
    return make_spec(backend, tmp_path)


def native_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    """The spec of ``request.param`` (one of :data:`NATIVE_BACKENDS`), on its native path."""
    return _spec(request, request.param, "native", tmp_path)


@pytest.fixture(params=BOARD_PATHS, ids=[f"{b}-{p}" for b, p in BOARD_PATHS], name="store_spec")
def both_paths(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    backend, path = request.param
    return _spec(request, backend, path, tmp_path)


@pytest.fixture(params=ALL_BACKENDS, name="store_spec")
def generic_path(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    return _spec(request, request.param, "generic", tmp_path)


@pytest.fixture
def board_path(store_spec: StoreSpec) -> str:
    """ "native" or "generic": the path the test's boards take."""
    return "generic" if os.environ.get(NATIVE_ENV) == "0" else "native"
