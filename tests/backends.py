"""Store backends under test: picklable specs so child processes can open the same store."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agentscope_teams.store import StoreBackend, store_from_url

REDIS_URL = os.environ.get("AGENTSCOPE_TEAMS_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_URL = os.environ.get(
    "AGENTSCOPE_TEAMS_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
MYSQL_URL = os.environ.get("AGENTSCOPE_TEAMS_MYSQL_URL", "mysql://root@127.0.0.1:3306/test")
REQUIRE_SERVICES = os.environ.get("AGENTSCOPE_TEAMS_REQUIRE_SERVICES") == "1"
#: An existing Redis Cluster to test against; unset, the tests start their own (tests/_redis_cluster).
REDIS_CLUSTER_URL = os.environ.get("AGENTSCOPE_TEAMS_REDIS_CLUSTER_URL")

ALL_BACKENDS = ("memory", "file", "sqlite", "mariadb", "postgres", "redis", "redis-cluster")
SHARED_BACKENDS = ("file", "sqlite", "mariadb", "postgres", "redis", "redis-cluster")
#: Backends on a Redis server (single or cluster): keys written with ``indexed=False`` are unlisted.
REDIS_BACKENDS = ("redis", "redis-cluster")
SERVICE_URLS = {"mariadb": MYSQL_URL, "postgres": POSTGRES_URL, "redis": REDIS_URL}


@dataclass(frozen=True)
class StoreSpec:
    """Enough to open the same store in another process."""

    backend: str
    url: str

    def open(self) -> StoreBackend:
        return store_from_url(self.url)


def service_reachable(url: str) -> bool:
    parts = urlsplit(url)
    default_port = {"redis": 6379, "postgresql": 5432, "mysql": 3306}
    port = parts.port or default_port.get(parts.scheme.split("+")[0], 0)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def make_spec(backend: str, tmp_path: Path, cluster_url: str | None = None) -> StoreSpec:
    """The spec of ``backend``; ``redis-cluster`` needs the URL of a running cluster."""
    if backend == "redis-cluster":
        assert cluster_url is not None, "a redis-cluster spec needs the cluster's URL"
        return StoreSpec(backend, cluster_url)
    if backend == "memory":
        return StoreSpec(backend, "memory://")
    if backend == "file":
        return StoreSpec(backend, f"file://{tmp_path / 'store'}")
    if backend == "sqlite":
        return StoreSpec(backend, f"sqlite:///{tmp_path / 'store.db'}")
    return StoreSpec(backend, SERVICE_URLS[backend])


def unique_namespace() -> str:
    """A key segment unique to one test, so tests sharing a server never see each other's data."""
    return "t-" + uuid.uuid4().hex[:12]


def sent_commands(client: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every command a Redis ``client`` sends through ``execute_command`` from now
    on (the list fills as it sends)."""
    sent: list[str] = []
    inner = client.execute_command

    async def recorded(*args: Any, **options: Any) -> Any:
        sent.append(str(args[0]))
        return await inner(*args, **options)

    monkeypatch.setattr(client, "execute_command", recorded)
    return sent
