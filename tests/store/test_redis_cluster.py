"""RedisStore on Redis Cluster: the URL, hash tags by key-registry group, tag-registry listings,
the waiting pool, signals and a HarnessAgent session, on the run's local 6-node cluster.

The whole conformance suite also runs on the cluster (the ``redis-cluster`` backend of
``tests/conftest.py``); the failover test is in ``test_redis_cluster_failover.py``.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

pytest.importorskip("redis")

from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.keys import (
    RunKeys,
    SessionAddress,
    TeamKeys,
    directory_key,
    sessions_prefix,
    token_index_key,
)
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store import InMemoryStore, Key, store_from_url
from agentscope_teams.store.redis import RedisStore

from ..agent import helpers
from ..backends import unique_namespace

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(redis_cluster_url: str) -> AsyncIterator[RedisStore]:
    s = store_from_url(redis_cluster_url, namespace=unique_namespace())
    assert isinstance(s, RedisStore)
    async with s:
        yield s


def slot(store: RedisStore, key: Key, kind: str = "") -> int:
    return key_slot(store.redis_name(key, kind).encode())


# -- the URL and the client -------------------------------------------------------------------


async def test_the_cluster_url_builds_a_cluster_client_from_every_listed_node(
    redis_cluster_url: str,
) -> None:
    store = store_from_url(redis_cluster_url)
    assert isinstance(store, RedisStore) and store.cluster
    assert isinstance(store._client, RedisCluster)
    listed = redis_cluster_url.split("://")[1].rstrip("/").split(",")
    assert sorted(store._client.nodes_manager.startup_nodes) == sorted(listed)
    await store.aclose()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("redis+cluster://127.0.0.1:7000,nohost/", "'nohost' is not host:port"),
        ("redis+cluster://127.0.0.1:7000/3", "no /db path"),
    ],
)
def test_a_bad_cluster_url_says_what_to_write(url: str, says: str) -> None:
    with pytest.raises(ConfigurationError, match=says) as info:
        store_from_url(url)
    assert "redis+cluster://" in str(info.value)


async def test_an_injected_cluster_client_works_and_stays_open(redis_cluster_url: str) -> None:
    host, port = redis_cluster_url.split("://")[1].split(",")[0].split(":")
    client = RedisCluster(startup_nodes=[ClusterNode(host, int(port))])
    ns = unique_namespace()
    async with RedisStore(client=client, namespace=ns) as store:
        assert store.cluster
        await store.put((ns, "a", "b", "c"), b"1", expected_version=0)
        assert [k for k in await store.list_keys((ns,))] == [(ns, "a", "b", "c")]
        assert await store.delete((ns, "a", "b", "c"), expected_version=1)
    assert await client.ping()  # the caller's client is not closed by the store
    await client.aclose()


async def test_scripts_are_loaded_on_every_primary(store: RedisStore) -> None:
    from agentscope_teams.store import _redis_scripts

    shas = [
        store._put.sha,
        store._delete.sha,
        store._delete_fenced.sha,
        store._append.sha,
        store._update_fields_fenced.sha,
    ]
    assert all(shas), "setup() loads the scripts, so their digests are known"
    for node in store._client.get_primaries():
        found = await store._client.execute_command("SCRIPT EXISTS", *shas, target_nodes=node)
        assert list(found) == [1] * len(shas), f"scripts missing on {node.name}"
    assert len(_redis_scripts.SCRIPTS) == 11


# -- hash tags: one slot per key-registry group -----------------------------------------------


async def test_a_session_its_lease_and_the_users_runs_share_one_slot(store: RedisStore) -> None:
    ctx = RuntimeContext(session_id="s1", user_id="bob", org_id="acme")
    address = SessionAddress.of(ctx, "lead")
    other = SessionAddress.of(ctx.with_session("s2"), "helper")
    runs = RunKeys.for_ctx(ctx)
    same = {
        slot(store, address.key),
        slot(store, address.lease_key),
        slot(store, other.key),
        slot(store, runs.run("r1")),
        slot(store, runs.lease("r1")),
        slot(store, sessions_prefix("acme", "bob"), ":idx"),
    }
    assert len(same) == 1
    # The family literal is not part of the tag: the names still differ by family.
    assert store.redis_name(address.key) != store.redis_name(address.lease_key)


async def test_everything_of_a_team_shares_the_team_slot(store: RedisStore) -> None:
    ctx = RuntimeContext(session_id="s1", user_id="bob", org_id="acme")
    team = TeamKeys(("o:acme", "u:bob"), "t-1")
    names = [
        store.redis_name(team.team()),
        store.redis_name(team.task("t-7")),
        store.redis_name(team.tasks_prefix(), ":idx"),
        store.redis_name(team.open_prefix(), ":idx"),
        store.redis_name(team.held_prefix(), ":idx"),
        store.redis_name(team.task_seq(), ":stream"),
        store.redis_name(team.task_seq(), ":seq"),
        store.redis_name(team.inbox("m1"), ":stream"),
        store.redis_name(team.cursor("m1")),
        store.redis_name(team.member_lease("m1")),
        store.redis_name(team.signal(), ":signal"),
        store.redis_name(directory_key(ctx, "t-1")),
        store.redis_name(token_index_key("acme", "bob", "t-1", "m1", "ab" * 32)),
    ]
    assert len({key_slot(n.encode()) for n in names}) == 1, names
    other = TeamKeys(("o:acme", "u:bob"), "t-2")
    spread = {
        key_slot(store.redis_name(TeamKeys(("o:acme", "u:bob"), f"t-{i}").team()).encode())
        for i in range(40)
    }
    assert len(spread) > 1, "different teams of one user spread over slots"
    assert store.redis_name(other.team()) != store.redis_name(team.team())


async def test_the_single_server_layout_is_unchanged() -> None:
    """Only cluster mode tags by group; one server keeps the first three segments."""
    store = RedisStore("redis://127.0.0.1:1/0", namespace="ns")
    team = TeamKeys(("o:acme", "u:bob"), "t-1")
    assert store.redis_name(team.task("t-7")) == "ns:{teams/o%3Aacme/u%3Abob}/t-1/task/t-7"
    await store.aclose()


# -- listings through tag registries ----------------------------------------------------------


def _random_keys(ns: str, rng: random.Random) -> list[Key]:
    """Keys whose tag prefixes are string prefixes of each other (``u:bob`` and ``u:bob-2``,
    whose keys interleave in byte order), of several lengths, of registry families and not."""
    users = ["u:bob", "u:bob-2", "u:bo", "u:b%"]
    keys: set[Key] = set()
    for _ in range(60):
        user = rng.choice(users)
        form = rng.randrange(5)
        if form == 0:
            keys.add(
                (
                    "teams",
                    f"o:{ns}",
                    user,
                    rng.choice(["t", "t-1", "t.x"]),
                    "task",
                    str(rng.randrange(9)),
                )
            )
        elif form == 1:
            keys.add(("team-runtime", f"o:{ns}", user, rng.choice(["t", "t-1", "t/x"])))
        elif form == 2:
            keys.add((ns, user))
        elif form == 3:
            keys.add((ns, user, "x", *(["y"] * rng.randrange(3))))
        else:
            keys.add((ns, user + "-", str(rng.randrange(3))))
    return sorted(keys)


@pytest.mark.parametrize("seed", [1, 2])
async def test_short_prefix_listings_match_the_reference_store_page_by_page(
    store: RedisStore, seed: int
) -> None:
    rng = random.Random(seed)
    ns = store.namespace
    reference = InMemoryStore()
    written = _random_keys(ns, rng)
    for key in written:
        await store.put(key, b"v")
        await reference.put(key, b"v")
    for key in rng.sample(written, 10):  # deleted keys leave stale registry members behind
        assert await store.delete(key)
        await reference.delete(key)
    prefixes: list[Key] = [
        ("teams",),
        ("teams", f"o:{ns}"),
        ("team-runtime",),
        ("team-runtime", f"o:{ns}"),
        (ns,),
        (ns, "u:bob"),
    ]
    for prefix in prefixes:
        want = await reference.list_keys(prefix)
        assert await store.list_keys(prefix) == want, prefix
        for limit in (1, 3):
            paged: list[Key] = []
            after: Key | None = None
            while True:
                page = await store.list_keys(prefix, limit=limit, after=after)
                if not page:
                    break
                paged += page
                after = page[-1]
            assert paged == want, (prefix, limit)
    mine = [k for k in await store.list_keys(()) if k[0] == ns or f"o:{ns}" in k]
    assert mine == [k for k in await reference.list_keys(()) if k[0] == ns or f"o:{ns}" in k]


async def test_a_registry_member_without_its_key_is_skipped(store: RedisStore) -> None:
    """A writer that dies after registering and before writing leaves a member, never a ghost."""
    ns = store.namespace
    await store.put((ns, "real"), b"v")
    registry = f"{ns}:{{{ns}}}:tags"
    await store._client.zadd(registry, {"ghost": 0, "ghost2/": 0})
    assert set(await store._client.zrange(registry, 0, -1)) == {b"real", b"ghost", b"ghost2/"}
    assert await store.list_keys((ns,)) == [(ns, "real")]


async def test_a_write_registers_its_group_once_per_store(store: RedisStore) -> None:
    ns = store.namespace
    team = TeamKeys((f"o:{ns}", "u:bob"), "t-1")
    calls: list[str] = []
    real = store._client.pipeline

    def counting(*args: object, **kwargs: object) -> object:
        calls.append("pipeline")
        return real(*args, **kwargs)

    store._client.pipeline = counting
    try:
        for i in range(5):
            await store.put(team.task(f"t-{i}"), b"v", expected_version=0)
    finally:
        store._client.pipeline = real
    assert calls == ["pipeline"]  # the first create registered the team's group; the rest skip
    assert len(await store.list_keys(("teams", f"o:{ns}"))) == 5


# -- pool, signals, the agent -----------------------------------------------------------------


async def test_a_full_pool_makes_callers_wait_instead_of_failing(redis_cluster_url: str) -> None:
    ns = unique_namespace()
    async with RedisStore(redis_cluster_url, namespace=ns, max_connections=2) as store:
        done: list[int] = []

        async def write(i: int) -> None:
            await store.put((ns, "k", str(i % 3), str(i)), b"v")
            done.append(i)

        async with anyio.create_task_group() as tg:
            for i in range(60):
                tg.start_soon(write, i)
        assert sorted(done) == list(range(60))
        assert len(await store.list_keys((ns,))) == 60


async def test_signals_reach_a_waiter_through_the_cluster(redis_cluster_url: str) -> None:
    ns = unique_namespace()
    channel = TeamKeys((f"o:{ns}", "u:bob"), "t-1").signal()
    async with (
        RedisStore(redis_cluster_url, namespace=ns) as waiter,
        RedisStore(redis_cluster_url, namespace=ns) as sender,
    ):
        woken: list[bool] = []

        async def wait() -> None:
            woken.append(await waiter.wait_signal([channel], timeout=10))

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait)
            for _ in range(100):  # until the waiter has subscribed
                await sender.signal(channel)
                await anyio.sleep(0.05)
                if woken:
                    break
        assert woken == [True]
        assert await waiter.wait_signal([channel], timeout=0.2) is False


async def test_a_harness_agent_session_round_trips_on_the_cluster(
    redis_cluster_url: str, tmp_path: Path
) -> None:
    ns = unique_namespace()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=ns)
    store = RedisStore(redis_cluster_url, namespace=ns)
    agent = HarnessAgent(
        "lead",
        ScriptedModel(helpers.brain),
        "sys",
        workspace=tmp_path / "ws",
        store=store,
        tools=helpers.recording_tools(tmp_path / "log.jsonl"),
    )
    async with store:
        assert (await agent.call("first", ctx)).get_text_content() == "echo: first"
        assert (await agent.call("second", ctx)).get_text_content() == "echo: second"
        await agent.call("other", ctx.with_session("s2"))
        state = await agent.get_agent_state(ctx)
        assert helpers.transcript(state.context) == [
            ("user", "first"),
            ("assistant", "echo: first"),
            ("user", "second"),
            ("assistant", "echo: second"),
        ]
        assert sorted(r.session_id for r in await agent.list_sessions(ctx)) == ["s1", "s2"]
        assert await agent.delete_session(ctx)
        assert [r.session_id for r in await agent.list_sessions(ctx)] == ["s2"]


async def test_a_fence_in_another_slot_is_refused_before_anything_is_written(
    store: RedisStore,
) -> None:
    from agentscope_teams.store import Fence

    ns = store.namespace
    team = TeamKeys((f"o:{ns}", "u:bob"), "t-1")
    other_team = TeamKeys((f"o:{ns}", "u:bob"), "t-2")
    await store.put(other_team.member_lease("m1"), b"me", indexed=False)
    assert slot(store, team.team()) != slot(store, other_team.member_lease("m1"))
    with pytest.raises(ConfigurationError, match="another Redis Cluster hash slot"):
        await store.put(team.team(), b"v", fence=Fence(other_team.member_lease("m1"), b"me"))
    assert await store.get(team.team()) is None
    # In the same group the fence works as on one server.
    await store.put(team.member_lease("m1"), b"me", indexed=False)
    assert await store.put(team.team(), b"v", fence=Fence(team.member_lease("m1"), b"me")) == 1


async def test_an_unreachable_cluster_is_unavailable_and_its_password_stays_secret() -> None:
    import socket

    from agentscope_teams.errors import StoreUnavailableError

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(StoreUnavailableError) as info:
        async with store_from_url(f"redis+cluster://user:s3cret@127.0.0.1:{port}/"):
            pass
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "s3cret" not in message
    assert "Redis Cluster" in message
