"""A Redis Cluster store's key layout is fixed when it is built, from the key registry's slot
grouping (``agentscope_teams.keys.slot_groups``, found through an entry point), whatever was
imported first; ``key_groups=`` overrides it. No server is needed: naming does no I/O."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.keys import slot_groups

pytest.importorskip("redis")

from agentscope_teams.store.redis import RedisStore

CLUSTER = "redis+cluster://127.0.0.1:1/"
PACKAGE = Path(__file__).resolve().parents[2] / "agentscope_teams"

#: Builds a cluster store with the package's __init__ (which imports the key registry) skipped,
#: so nothing but the store's construction can load agentscope_teams.keys; prints its names.
CHILD = """
import json, sys, types
pkg = types.ModuleType("agentscope_teams")
pkg.__path__ = [sys.argv[1]]
sys.modules["agentscope_teams"] = pkg
from agentscope_teams.store.redis import RedisStore
before = "agentscope_teams.keys" in sys.modules
import anyio

async def main():
    store = RedisStore(sys.argv[2])  # a store is built in an event loop
    keys = [tuple(k) for k in json.loads(sys.argv[3])]
    return [store.redis_name(k) for k in keys]

print(json.dumps({"keys_imported_before": before, "names": anyio.run(main)}))
"""


def registry_keys() -> list[tuple[str, ...]]:
    """One key per registry literal, one segment longer than its group."""
    return [
        (literal, *(f"s{i}" for i in range(1, size + 1)))
        for literal, size in sorted(slot_groups().items())
    ]


async def test_a_cluster_store_groups_keys_by_the_key_registry() -> None:
    store = RedisStore(CLUSTER)
    assert store.key_groups == slot_groups()
    literal, size = "sessions", slot_groups()["sessions"]
    key = (literal, *(f"s{i}" for i in range(1, size + 1)))
    tag = "/".join(key[1:size])
    assert store.redis_name(key) == f"ast:{literal}{{{tag}}}/{key[size]}"


async def test_the_layout_does_not_depend_on_import_order() -> None:
    keys = registry_keys()
    expected = [RedisStore(CLUSTER).redis_name(k) for k in keys]
    ungrouped = [RedisStore(CLUSTER, key_groups={}).redis_name(k) for k in keys]
    assert expected != ungrouped  # the grouping changes names, so the check below can fail
    out = await anyio.run_process(
        [sys.executable, "-c", CHILD, str(PACKAGE), CLUSTER, json.dumps(keys)]
    )
    child = json.loads(out.stdout)
    assert child["keys_imported_before"] is False
    assert child["names"] == expected


async def test_key_groups_override_and_are_checked() -> None:
    store = RedisStore(CLUSTER, key_groups={"mine": 2})
    assert store.redis_name(("mine", "a", "b", "c")) == "ast:mine{a}/b/c"
    with pytest.raises(ConfigurationError, match="key_groups"):
        RedisStore(CLUSTER, key_groups={"mine": 0})


async def test_a_single_server_ignores_the_grouping() -> None:
    store = RedisStore("redis://127.0.0.1:1/0")
    assert store.key_groups == {}
    assert store.redis_name(("sessions", "a", "b", "c", "d")) == "ast:{sessions/a/b}/c/d"
