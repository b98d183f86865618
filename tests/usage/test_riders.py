"""On one Redis server a governed ``HarnessAgent.call`` sends its ``ADMIT`` in the socket write of
its session lease + load and its last ``FINISH`` in that of its last save (riders,
``agentscope_teams.store._redis_riders``): the round trips of an ungoverned call, the same budget
numbers after it, no ``FINISH`` held across a tool step, and every settle landed when the call ends
however it ends. Round trips are counted on the client (``execute_command``: one command alone,
``execute_many``: one write of several)."""

from __future__ import annotations

import asyncio
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams import Budget, HarnessAgent, RateLimit, RuntimeContext
from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.agent.harness import SessionWriter
from agentscope_teams.errors import StoreUnavailableError
from agentscope_teams.message import TextBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, RedisStore
from agentscope_teams.tools import tool
from agentscope_teams.usage import UsageGovernor, add_budget, flush
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.limiter import limiter_key

pytestmark = pytest.mark.anyio
USED = Usage(input_tokens=30, output_tokens=10)
#: A budget and a limit with a concurrency lease that never makes a call wait.
LIMIT = RateLimit(requests_per_minute=1e7, burst=1000, concurrent=100)


class Trips:
    """The round trips a Redis client makes: each a tuple of the command names it carried."""

    def __init__(self, client: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.seen: list[tuple[str, ...]] = []
        one, many = client.execute_command, client.execute_many

        async def execute_command(*args: Any, **kw: Any) -> Any:
            self.seen.append((str(args[0]),))
            return await one(*args, **kw)

        async def execute_many(commands: Any) -> Any:
            self.seen.append(tuple(str(c[0]) for c in commands))
            return await many(commands)

        monkeypatch.setattr(client, "execute_command", execute_command)
        monkeypatch.setattr(client, "execute_many", execute_many)

    def take(self) -> list[tuple[str, ...]]:
        seen, self.seen = self.seen, []
        return seen


def _model() -> ScriptedModel:
    def reply(request: ModelRequest) -> ModelResponse:
        return ModelResponse(content=[TextBlock(text="ok")], usage=USED)

    return ScriptedModel(reply, name="scripted-" + uuid.uuid4().hex[:8])


def _agent(store: BaseStore, tmp_path: Path, model: ScriptedModel, **kw: Any) -> HarnessAgent:
    gov = UsageGovernor(store, rate_limit=LIMIT)
    return HarnessAgent(
        "a", model, store=store, workspace=tmp_path, usage=gov, builtin_tools=False,
        config=ReActConfig(stream_model=False), **kw,
    )  # fmt: skip


async def _state(store: Any, team: str, model: ScriptedModel) -> tuple[int, int, list[str]]:
    """(settled tokens, reserved tokens, the limiter's leases) once every settle landed."""
    await flush(store)
    doc = await usage_backend(store).read(team)
    assert doc is not None
    backend: Any = usage_backend(store)
    raw = await store.client.hgetall(backend._limiter(limiter_key(model)))
    leases = [k.decode() for k in raw if k.startswith(b"l:")]
    return doc["ut"], doc["rt"], leases


async def _calls(store: Any, tmp_path: Path, ride: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Round trips of a governed call on a new and on an existing session, and the budget's
    numbers after them (``ride``: False turns riders off, as on a cluster)."""
    monkeypatch.setattr(store, "_rides", ride)
    model, team = _model(), "team:" + uuid.uuid4().hex[:8]
    agent = _agent(store, tmp_path, model)
    ctx = RuntimeContext(session_id="s-" + uuid.uuid4().hex[:6], user_id="u", org_id="o")
    with add_budget(team, Budget(max_tokens=10**9), store=store):
        await agent.call("warm", RuntimeContext(session_id="warm-" + uuid.uuid4().hex[:6]))
        trips = Trips(store.client, monkeypatch)
        await agent.call("hi", ctx)
        new = trips.take()
        await agent.call("again", ctx)
        existing = trips.take()
    monkeypatch.undo()
    return new, existing, await _state(store, team, model)


async def test_a_governed_call_makes_the_round_trips_of_an_ungoverned_one(
    redis: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two round trips fewer per call, new or existing session (4 -> 2: [ADMIT, lease + load],
    [FINISH, save]), and the budget and limiter left exactly as the four round trips leave them."""
    alone = await _calls(redis, tmp_path, False, monkeypatch)
    riding = await _calls(redis, tmp_path, True, monkeypatch)
    assert alone[0] == alone[1] == [("EVALSHA",)] * 4
    assert riding[0] == riding[1] == [("EVALSHA", "EVALSHA")] * 2
    assert alone[2] == riding[2] == (2 * 40 + 40, 0, [])  # the warm-up's call and two more


async def test_a_finish_is_not_held_across_a_tool_step(
    redis: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step that calls a tool settles at once (its lease is gone when the tool runs); only
    the last step's ``FINISH`` rides the last save."""
    seen: list[list[str]] = []
    model_name = "scripted-" + uuid.uuid4().hex[:8]

    @tool(read_only=True)
    async def look() -> str:
        """Look at the limiter."""
        backend: Any = usage_backend(redis)
        running = list(backend.settles._tasks)  # the settle tasks only (flush lands riders too)
        if running:
            await asyncio.wait(running)
        assert not backend.settles._later  # no FINISH waits for a round trip
        raw = await redis.client.hgetall(backend._limiter(limiter_key(model)))  # type: ignore[attr-defined]
        seen.append([k.decode() for k in raw if k.startswith(b"l:")])
        return "seen"

    model = ScriptedModel(
        [ScriptedModel.tool_call("look", {}), ModelResponse(content=[TextBlock(text="done")])],
        name=model_name,
    )
    agent = _agent(redis, tmp_path, model, tools=[look])
    team = "team:" + uuid.uuid4().hex[:8]
    trips = Trips(redis.client, monkeypatch)  # type: ignore[attr-defined]
    with add_budget(team, Budget(max_tokens=10**9), store=redis):
        msg = await agent.call("go", RuntimeContext(session_id="t-" + uuid.uuid4().hex[:6]))
    assert msg is not None and msg.get_text_content() == "done"
    assert seen == [[]]
    assert trips.take()[-1] == ("EVALSHA", "EVALSHA")  # the last FINISH rode the last save
    assert (await _state(redis, team, model))[1:] == (0, [])


async def test_a_call_failing_after_its_model_call_still_settles(
    redis: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No save carries the ``FINISH`` (the save fails before sending): it is sent alone when the
    call ends, its usage counted and its lease gone."""

    async def broken(self: Any, *args: Any, **kw: Any) -> None:
        raise RuntimeError("save failed")

    model, team = _model(), "team:" + uuid.uuid4().hex[:8]
    agent = _agent(redis, tmp_path, model)
    monkeypatch.setattr(SessionWriter, "save", broken)
    with (
        add_budget(team, Budget(max_tokens=10**9), store=redis),
        pytest.raises(RuntimeError, match="save"),
    ):
        await agent.call("hi", RuntimeContext(session_id="f-" + uuid.uuid4().hex[:6]))
    monkeypatch.undo()
    assert await _state(redis, team, model) == (40, 0, [])


async def test_a_riders_error_fails_only_that_rider(redis: BaseStore) -> None:
    """A script error of a rider is its own; the carrier's write succeeds. A rider no round trip
    took is sent alone when landed, or dropped unsent."""
    store: Any = redis
    boom = store.register_script("return redis.error_reply('boom')")
    echo = store.register_script("return ARGV[1]")
    key = ("riders", uuid.uuid4().hex[:8])
    token = store.open_rides()
    assert token is not None
    try:
        bad, good = store.ride(boom, [], []), store.ride(echo, [], ["x"])
        assert await store.put(key, b"v") == 1
        alone, dropped = store.ride(echo, [], ["y"]), store.ride(echo, [], ["z"])
    finally:
        store.close_rides(token)
    with pytest.raises(Exception, match="boom"):
        await store.land(bad)
    assert await store.land(good) == b"x"
    assert await store.land(alone) == b"y"
    assert store.drop(dropped) and not store.drop(alone)
    with pytest.raises(StoreUnavailableError):
        await store.land(dropped)
    assert (await store.get(key)).value == b"v"


async def test_a_carriers_error_does_not_fail_its_riders(redis: BaseStore) -> None:
    store: Any = redis
    boom = store.register_script("return redis.error_reply('boom')")
    echo = store.register_script("return ARGV[1]")
    token = store.open_rides()
    try:
        rider = store.ride(echo, [], ["x"])
        with pytest.raises(Exception, match="boom"):
            await store.run_script(boom, [], [])
    finally:
        store.close_rides(token)
    assert await store.land(rider) == b"x"


async def test_no_riders_without_a_riding_block_or_with_replica_acks(redis: BaseStore) -> None:
    store: Any = redis
    echo = store.register_script("return ARGV[1]")
    assert store.ride(echo, [], ["x"]) is None  # no block: run_script as before
    store.replica_acks = 1
    try:
        assert store.open_rides() is None
    finally:
        store.replica_acks = 0


@pytest.fixture
def private(tmp_path: Path) -> Iterator[str]:
    """The URL of a private ``redis-server`` (its scripts are flushed here)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    args = ["--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(tmp_path)]
    proc = subprocess.Popen([binary, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(10)


async def test_noscript_of_a_rider_and_of_its_carrier_loads_and_sends_again(private: str) -> None:
    """A flushed script cache: both commands of the pipeline answer ``NOSCRIPT``; each is loaded
    and sent again, and each gets its own reply."""
    async with RedisStore(private) as store:
        await _noscript(store)


async def _noscript(store: Any) -> None:
    echo = store.register_script("return ARGV[1]")
    key = ("riders", "noscript")
    await store.client.script_flush()
    token = store.open_rides()
    try:
        rider = store.ride(echo, [], ["x"])
        assert await store.put(key, b"v") == 1
    finally:
        store.close_rides(token)
    assert await store.land(rider) == b"x"
    assert (await store.get(key)).value == b"v"


async def test_a_call_cancelled_before_its_lease_sends_no_admit(
    redis: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The queued ``ADMIT`` of a call cancelled while it waits for its session (before the lease
    round trip) is dropped unsent: nothing reserved, nothing to give back, no round trip."""
    model, team = _model(), "team:" + uuid.uuid4().hex[:8]
    agent = _agent(redis, tmp_path, model)
    waiting = anyio.Event()

    class Busy:
        async def __aenter__(self) -> None:
            waiting.set()
            await anyio.sleep_forever()

        async def __aexit__(self, *exc: object) -> None:
            return None

    monkeypatch.setattr(agent, "_exclusive", lambda *a, **kw: Busy())
    trips = Trips(redis.client, monkeypatch)  # type: ignore[attr-defined]
    with anyio.fail_after(20), add_budget(team, Budget(max_tokens=10**9), store=redis):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.call, "hi", RuntimeContext(session_id="c-" + uuid.uuid4().hex[:6]))
            await waiting.wait()
            tg.cancel_scope.cancel()
    await flush(redis)
    assert trips.take() == []
    assert await usage_backend(redis).read(team) is None  # never written


async def test_a_carrier_cancelled_while_it_loads_a_riders_script_answers_its_other_riders(
    redis: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first and third riders' scripts are unknown to the server (``NOSCRIPT``: loaded and
    sent again) and the carrier is cancelled while it loads the first: the second rider, which
    the server ran, has its reply; the first, whose outcome is unknown, is lost; the third, which
    the server did not run, is queued again (sent alone when landed)."""
    store: Any = redis
    unknown = store.register_script(f"-- {uuid.uuid4().hex}\nreturn ARGV[1]")
    other = store.register_script(f"-- {uuid.uuid4().hex}\nreturn ARGV[1]")
    echo = store.register_script("return ARGV[1]")
    await store.run_script(echo, [], ["loaded"])
    loading = anyio.Event()

    async def script_load(script: str) -> None:
        loading.set()
        await anyio.sleep_forever()

    monkeypatch.setattr(store.client, "script_load", script_load)
    token = store.open_rides()
    try:
        first, second = store.ride(unknown, [], ["x"]), store.ride(echo, [], ["y"])
        third = store.ride(other, [], ["z"])
        with anyio.fail_after(20):
            async with anyio.create_task_group() as tg:
                tg.start_soon(store.put, ("riders", uuid.uuid4().hex[:8]), b"v")
                await loading.wait()
                tg.cancel_scope.cancel()
    finally:
        store.close_rides(token)
    monkeypatch.undo()
    assert first.lost
    assert second.done() and await store.land(second) == b"y"
    assert third.waiting and await store.land(third) == b"z"
