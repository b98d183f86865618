"""Store URLs by scheme through the registry: known schemes listed in errors, query options
checked by name, a backend registered at run time, and a Redis database the server lacks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.store import (
    InMemoryStore,
    StoreBackend,
    register_store_scheme,
    store_from_url,
    store_schemes,
)
from agentscope_teams.store.registry import ENTRY_POINT_GROUP, unregister_store_scheme

from ..backends import REDIS_URL
from ..conftest import require_service

BUILT_IN = ["file", "mariadb", "memory", "mysql", "postgres", "postgresql", "redis", "rediss"]


def test_every_built_in_scheme_is_known() -> None:
    assert set(BUILT_IN) | {"redis+cluster", "sqlite", "unix"} <= set(store_schemes())


def test_an_unknown_scheme_names_the_known_ones_and_the_entry_point_group() -> None:
    with pytest.raises(ConfigurationError) as info:
        store_from_url("tiny://somewhere")
    message = str(info.value)
    assert "'tiny' is not registered" in message
    assert all(f"{s}://" in message for s in store_schemes())
    assert ENTRY_POINT_GROUP in message


@pytest.mark.parametrize(
    ("url", "option"),
    [
        ("memory://?shards=2", "shards"),
        ("redis://127.0.0.1:6379/0?sokcet_timeout=3", "sokcet_timeout"),
        ("rediss://127.0.0.1:6379/0?foo=1", "foo"),
        ("redis+cluster://127.0.0.1:7000/?read_from_replicas=1", "read_from_replicas"),
        ("postgresql://u@127.0.0.1/db?sslmod=require", "sslmod"),
        ("mysql://root@127.0.0.1/db?charsett=utf8mb4", "charsett"),
        ("sqlite:////tmp/x.db?timout=5", "timout"),
    ],
)
async def test_an_unknown_query_option_is_named(url: str, option: str) -> None:
    with pytest.raises(ConfigurationError, match=option):
        store_from_url(url)


async def test_a_file_url_takes_no_query(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="lock_timeout"):
        store_from_url(f"file://{tmp_path}?lock_timeout=3")


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:6379/0?socket_timeout=3&health_check_interval=10",
        "postgresql://u@127.0.0.1/db?command_timeout=5&prepared_statement_cache_size=0",
        "mysql://root@127.0.0.1/db?charset=utf8mb4",
        "sqlite:////tmp/x.db?timeout=5",
    ],
)
async def test_known_query_options_still_work(url: str) -> None:
    await store_from_url(url).aclose()


async def test_a_negative_redis_db_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="database -1"):
        store_from_url("redis://127.0.0.1:6379/0?db=-1")


async def test_a_redis_db_the_server_lacks_is_a_configuration_error() -> None:
    require_service("redis")
    url = REDIS_URL.rsplit("/", 1)[0] + "/4096"
    with pytest.raises(ConfigurationError, match="refused database 4096"):
        async with store_from_url(url):
            pass


@pytest.fixture
def tiny() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    opened: list[tuple[str, dict[str, Any]]] = []

    def open_tiny(url: str, **options: Any) -> StoreBackend:
        opened.append((url, options))
        return InMemoryStore(**options)

    register_store_scheme("tiny", open_tiny)
    try:
        yield opened
    finally:
        unregister_store_scheme("tiny")


async def test_a_registered_scheme_opens_with_its_opener(tiny: list[Any]) -> None:
    store = store_from_url("tiny://here", max_value_bytes=2048)
    assert isinstance(store, InMemoryStore) and store.max_value_bytes == 2048
    assert tiny == [("tiny://here", {"max_value_bytes": 2048})]
    assert "tiny" in store_schemes()


def test_a_known_scheme_is_not_taken_over_by_accident(tiny: list[Any]) -> None:
    with pytest.raises(ConfigurationError, match="already registered"):
        register_store_scheme("redis", lambda url, **o: InMemoryStore())
    with pytest.raises(ConfigurationError, match="already registered"):
        register_store_scheme("tiny", lambda url, **o: InMemoryStore())
    with pytest.raises(ConfigurationError, match="before '://'"):
        register_store_scheme("tiny://", lambda url, **o: InMemoryStore())
