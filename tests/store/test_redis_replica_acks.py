"""``RedisStore(replica_acks=N)``: every write is followed by ``WAIT N`` on the same connection, in
the same round trip, and raises StoreUnavailableError when fewer replicas confirm it.

The single-server tests run on a private primary + replica pair (:class:`LocalPair`): the replica
is SIGSTOPped to make it confirm nothing. The cluster test uses the shared test cluster.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest

pytest.importorskip("redis")

from redis.asyncio.cluster import ClusterNode

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import ConfigurationError, StoreUnavailableError
from agentscope_teams.store.redis import RedisStore
from agentscope_teams.teams import LocalTeamClient, Member, TeamKeys
from agentscope_teams.teams.board import TaskBoard

from .._redis_cluster import LocalCluster, LocalPair, SlotMove, cluster_binaries
from ..backends import unique_namespace
from ..conftest import start_cluster
from ..teams.round_trips import count_round_trips

pytestmark = pytest.mark.anyio

SET = "redis.call('SET', KEYS[1], ARGV[1]) return 1"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalPair]:
    if cluster_binaries() is None:
        pytest.skip("redis-server / redis-cli are not installed")
    started = LocalPair(tmp_path_factory.mktemp("replica-pair"))
    started.start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
async def acked(pair: LocalPair) -> AsyncIterator[RedisStore]:
    # a healthy replica confirms at once; the bound is only reached on a loaded machine
    url = f"{pair.url}?replica_acks=1&replica_ack_timeout=2"
    async with RedisStore(url, namespace=unique_namespace()) as store:
        yield store


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"replica_acks": -1}, "replica_acks"),
        ({"replica_acks": 1.5}, "replica_acks"),
        ({"replica_acks": True}, "replica_acks"),
        ({"replica_ack_timeout": 0}, "replica_ack_timeout"),
        ({"replica_ack_timeout": "1"}, "replica_ack_timeout"),
    ],
)
def test_a_bad_option_value_is_refused_by_name(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        RedisStore("redis://127.0.0.1:1/0", **options)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis://127.0.0.1:1/0?replica_acks=-1", "replica_acks must be an int >= 0"),
        ("redis://127.0.0.1:1/0?replica_acks=one", "replica_acks must be a number"),
        ("redis+cluster://127.0.0.1:1/?replica_ack_timeout=x", "replica_ack_timeout must be a"),
    ],
)
def test_a_bad_url_option_is_refused_by_name(url: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        RedisStore(url)


@pytest.mark.parametrize(
    "url",
    [
        "redis://127.0.0.1:1/0?replica_acks=1&replica_ack_timeout=5",  # redis-py reads for 5 s
        "redis://127.0.0.1:1/0?replica_acks=1&replica_ack_timeout=3&socket_timeout=2",
        "redis+cluster://127.0.0.1:1/?replica_acks=1&replica_ack_timeout=8",
    ],
)
def test_an_ack_timeout_the_socket_timeout_would_cut_short_is_refused(url: str) -> None:
    """A WAIT answered after the socket timeout would drop the connection and report the server
    gone instead of the replicas late: refused when the store is made, naming both options."""
    with pytest.raises(ConfigurationError, match=r"replica_ack_timeout .* socket_timeout"):
        RedisStore(url)


def test_a_longer_ack_timeout_is_taken_with_a_longer_socket_timeout() -> None:
    url = "redis://127.0.0.1:1/0?replica_acks=1&replica_ack_timeout=8&socket_timeout=10"
    assert RedisStore(url).replica_ack_timeout == 8
    assert RedisStore("redis://127.0.0.1:1/0?replica_ack_timeout=8").replica_acks == 0  # no WAIT


def test_the_url_options_are_read_and_left_out_of_the_connection() -> None:
    store = RedisStore("redis+cluster://127.0.0.1:1/?replica_acks=2&replica_ack_timeout=0.5")
    assert (store.replica_acks, store.replica_ack_timeout) == (2, 0.5)
    store = RedisStore("redis://127.0.0.1:1/3?replica_acks=1&socket_timeout=5")
    assert store.replica_acks == 1 and store._db == 3
    assert "replica" not in store._where and "socket_timeout=5" in store._where
    assert RedisStore("redis://127.0.0.1:1/0").replica_acks == 0


def _writes(store: RedisStore) -> list[Callable[[], Awaitable[object]]]:
    """Every kind of write the store sends (one call each), in an order that makes each valid."""
    key, stream, lease = ("t", "s", "a", "b"), ("t", "s", "log"), ("t", "s", "lease")
    script = store.register_script(SET)
    return [
        lambda: store.put(key, b"v", expected_version=0),
        lambda: store.put(key, b"v2", expected_version=1, ttl=60),
        lambda: store.put_fields(key, b"v3", expected_version=2, fields=[("f", b"x")]),
        lambda: store.create_then_get(lease, b"l", ttl=60, read=key),
        lambda: store.delete(lease, indexed=False),
        lambda: store.delete(key, expected_version=3),
        lambda: store.append(stream, b"e"),
        lambda: store.delete_stream(stream),
        lambda: store.run_script(script, [store.redis_name(key, ":x")], [b"1"]),
    ]


async def test_every_write_sends_wait_on_its_connection_in_the_same_round_trip(
    acked: RedisStore,
) -> None:
    await acked.load_scripts([SET])
    for write in _writes(acked):
        async with count_round_trips(acked, pipelines=True) as trips:
            await write()
        assert trips.seen == ["PIPELINE EVALSHA WAIT"] or trips.seen == ["PIPELINE DEL WAIT"]
    async with count_round_trips(acked, pipelines=True) as trips:
        await acked.get(("t", "s", "a", "b"))
    assert trips.seen == ["HMGET"]  # reads are not confirmed


async def test_a_write_no_replica_confirms_raises_after_the_timeout(pair: LocalPair) -> None:
    key = ("t", "s", "paused")
    url = f"{pair.url}?replica_acks=1&replica_ack_timeout=0.3"
    async with RedisStore(url, namespace=unique_namespace()) as acked:
        pair.pause_replica()
        try:
            with anyio.fail_after(30):
                with pytest.raises(StoreUnavailableError, match="not confirmed by 1 replica"):
                    await acked.put(key, b"v")
        finally:
            pair.resume_replica()
        found = await acked.get(key)  # it happened on the primary
        assert found is not None and found.value == b"v"
        await acked.put(key, b"w", expected_version=1)  # the replica is back: confirmed


async def test_more_replicas_than_the_primary_has_are_never_confirmed(pair: LocalPair) -> None:
    async with RedisStore(pair.url, replica_acks=2, replica_ack_timeout=0.1) as store:
        with pytest.raises(StoreUnavailableError, match="not confirmed by 2 replica"):
            await store.append(("t", "s", "log"), b"e")
        with pytest.raises(StoreUnavailableError, match="not confirmed by 2 replica"):
            await store.delete_stream(("t", "s", "log"))


async def test_a_script_the_server_has_not_loaded_is_loaded_and_run_once(acked: RedisStore) -> None:
    script = acked.register_script(SET + " -- " + unique_namespace())
    name = acked.redis_name(("t", "s", "fresh"))
    assert await acked.run_script(script, [name], [b"1"]) == 1
    assert await acked.client.get(name) == b"1"


def _recorded_pipelines(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """Each pipeline a cluster client sends from now on: (node, its commands' names)."""
    sent: list[tuple[str, list[str]]] = []
    real = ClusterNode.execute_pipeline

    async def recording(node: ClusterNode, commands: list[Any]) -> bool:
        sent.append((node.name, [str(c.args[0]) for c in commands]))
        return await real(node, commands)

    monkeypatch.setattr(ClusterNode, "execute_pipeline", recording)
    return sent


async def test_on_a_cluster_the_write_and_wait_go_to_the_owning_node_together(
    redis_cluster_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _recorded_pipelines(monkeypatch)
    async with RedisStore(redis_cluster_url, namespace=unique_namespace(), replica_acks=1) as store:
        key = ("t", "s", "a", "b")
        await store.put(key, b"v", expected_version=0)
        await store.put(key, b"w", expected_version=1)
        owner = store.client.get_node_from_key(store.redis_name(key)).name
        assert sent[-2:] == [(owner, ["EVALSHA", "WAIT"])] * 2
        found = await store.get(key)
        assert found is not None and found.value == b"w"


async def test_on_a_cluster_the_tag_registries_are_confirmed_too(
    redis_cluster_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A key's first write registers its tag in the registries of its short prefixes (other
    slots): each ``ZADD`` goes with a ``WAIT`` to its registry's node, before the write."""
    sent = _recorded_pipelines(monkeypatch)
    async with RedisStore(redis_cluster_url, namespace=unique_namespace(), replica_acks=1) as store:
        key = ("t", "s", "a", "b")
        registries = [reg for reg, _ in store._naming.registrations(key)]
        assert registries
        await store.put(key, b"v", expected_version=0)
        nodes = [store.client.get_node_from_key(reg).name for reg in registries]
        assert sent[: len(nodes)] == [(n, ["ZADD", "WAIT"]) for n in nodes]
        assert sent[len(nodes) :] == [(sent[-1][0], ["EVALSHA", "WAIT"])]
        assert await store.list_keys(("t",)) == [key]


async def test_the_board_queue_confirms_its_writes_and_not_its_listing(acked: RedisStore) -> None:
    client = LocalTeamClient(acked, RuntimeContext(session_id="s", user_id="acks"))
    team = await client.create_team("acks", members=[Member(name="m")])
    await client.assign_task(team.id, "job")
    async with count_round_trips(acked, pipelines=True) as trips:
        task = await client.claim_task(team.id, "m")
        assert task is not None
        await client.complete_task(team.id, "m", task.id, "done")
    assert trips.seen.count("PIPELINE EVALSHA WAIT") >= 2 and "EVALSHA" not in trips.seen
    async with count_round_trips(acked, pipelines=True) as trips:
        assert await client.wait_for_tasks(team.id, timeout=0)  # OPEN_PAGE: a read-only script
    assert "EVALSHA" in trips.seen and not any("WAIT" in seen for seen in trips.seen)


async def _board(store: RedisStore) -> tuple[LocalTeamClient, str, TaskBoard]:
    client = LocalTeamClient(store, RuntimeContext(session_id="s", user_id=unique_namespace()))
    team = await client.create_team("acks", members=[Member(name="m")])
    board = TaskBoard(store, TeamKeys(client.ctx.owner_scope(), team.id))
    assert board.native
    return client, team.id, board


async def test_the_board_queue_confirms_its_index_writes(acked: RedisStore) -> None:
    """Creating a task (its pending entry), rebuilding the index and dropping it are confirmed
    as the store's writes are: a task whose record survives a failover keeps its entry."""
    client, team_id, board = await _board(acked)
    async with count_round_trips(acked, pipelines=True) as trips:
        await client.assign_task(team_id, "job")  # the record, then its pending entry
        await client.assign_task(team_id, "routed", assignee="m")  # an entry of the routed set
    assert trips.seen.count("PIPELINE WAIT ZADD") == 2 and "ZADD" not in trips.seen
    async with count_round_trips(acked, pipelines=True) as trips:
        assert await board.rebuild_index() == 2
    assert trips.seen[-1] == "PIPELINE EVALSHA WAIT" and "MULTI" not in " ".join(trips.seen)
    assert await client.claim_task(team_id, "m") is not None  # the rebuilt index serves claims
    async with count_round_trips(acked, pipelines=True) as trips:
        await board.drop_index()
    assert trips.seen == ["PIPELINE DEL WAIT"]


async def test_a_board_index_write_no_replica_confirms_raises(pair: LocalPair) -> None:
    """With the replica paused, a task's pending entry and a rebuilt index are reported not
    confirmed, as the store's own writes are; both happened on the primary."""
    url = f"{pair.url}?replica_acks=1&replica_ack_timeout=0.3"
    async with RedisStore(url, namespace=unique_namespace()) as acked:
        client, team_id, board = await _board(acked)
        task = await client.assign_task(team_id, "job")
        pair.pause_replica()
        try:
            with anyio.fail_after(30):
                with pytest.raises(StoreUnavailableError, match="not confirmed by 1 replica"):
                    await board.queue.enqueue(task)
                with pytest.raises(StoreUnavailableError, match="not confirmed by 1 replica"):
                    await board.rebuild_index()
        finally:
            pair.resume_replica()
        claimed = await client.claim_task(team_id, "m")
        assert claimed is not None and claimed.id == task.id


@pytest.fixture(scope="module")
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = start_cluster(tmp_path_factory.mktemp("acks-cluster"))
    try:
        yield cluster
    finally:
        cluster.stop()


async def test_a_confirmed_write_follows_ask_and_moved_on_the_owning_node(
    own_cluster: LocalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[tuple[int, list[str]]] = []
    real = ClusterNode.execute_pipeline

    async def recording(node: ClusterNode, commands: list[Any]) -> bool:
        sent.append((node.port, [str(c.args[0]) for c in commands]))
        return await real(node, commands)

    monkeypatch.setattr(ClusterNode, "execute_pipeline", recording)
    async with RedisStore(own_cluster.url, namespace=unique_namespace(), replica_acks=1) as store:
        key, fresh = ("t", "s", "a", "b"), ("t", "s", "a", "new")
        await store.put(key, b"v", expected_version=0)
        name = store.redis_name(key)
        source = store.client.get_node_from_key(name).port
        target = next(p for p in own_cluster.primaries() if p != source)
        move = SlotMove(store.client.keyslot(name), source, target, own_cluster.ports)
        move.begin()
        sent.clear()
        await store.put(fresh, b"f", indexed=False)  # not on the source: ASK, sent to the target
        assert sent == [(source, ["EVALSHA", "WAIT"]), (target, ["ASKING", "EVALSHA", "WAIT"])]
        move.migrate(move.keys())
        move.finish()
        sent.clear()
        await store.put(key, b"w", expected_version=1)  # the slot map is stale: MOVED
        assert sent == [(source, ["EVALSHA", "WAIT"]), (target, ["EVALSHA", "WAIT"])]
        found = await store.get(key)
        assert found is not None and found.value == b"w"
