"""A ``HarnessAgent.call`` sends its first ``ADMIT`` beside its session lease and load
(:mod:`agentscope_teams.usage.early`): one sequential round trip fewer before the request, and every
guarantee of the request's own admission kept: a reservation too small, stale or refused is given
back (or was never held) and the request admits as before; a cancelled call leaves nothing held."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams import Budget, BudgetExceededError, HarnessAgent, RateLimit, RuntimeContext
from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.message import TextBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore
from agentscope_teams.usage import UsageGovernor, flush
from agentscope_teams.usage import early as early_mod
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.limiter import limiter_key
from agentscope_teams.usage.rules import Admission, Limit, Rates

from ..backends import StoreSpec, unique_namespace

pytestmark = pytest.mark.anyio
USED = Usage(input_tokens=30, output_tokens=10)
#: A limit that never makes a call wait, with a concurrency lease to give back and no clock
#: (so no ``TURN_AHEAD`` bound: a slow machine cannot change what these tests see).
NEVER_WAITS = RateLimit(concurrent=100)
#: The same with a requests/min clock.
CLOCKED = RateLimit(requests_per_minute=1e7, burst=1000, concurrent=100)
STORES = ["memory", "file", "sqlite", "postgres", "mariadb", "redis"]


class Seen:
    """The store operations of the usage backend, in order, and the requests the model got."""

    def __init__(self, store: BaseStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ops: list[str] = []
        self.requests: list[ModelRequest] = []
        self.before_admit: Callable[[], Awaitable[None]] | None = None
        #: ``ADMIT`` answers received.
        self.answers = 0
        self._answer = anyio.Event()
        backend: Any = usage_backend(store)
        admit, finish, give_back = backend.admit, backend.finish, backend.give_back

        async def counted_admit(a: Admission) -> Any:
            self.ops.append("admit")
            if self.before_admit is not None:
                await self.before_admit()
            answer = await admit(a)
            self.answers += 1
            self._answer.set()
            self._answer = anyio.Event()
            return answer

        async def counted_finish(a: Admission, tokens: int, nanos: int) -> None:
            self.ops.append("release" if (tokens, nanos) == (0, 0) else "settle")
            await finish(a, tokens, nanos)

        async def counted_give_back(a: Admission) -> None:
            self.ops.append("release")
            await give_back(a)

        monkeypatch.setattr(backend, "admit", counted_admit)
        monkeypatch.setattr(backend, "finish", counted_finish)
        monkeypatch.setattr(backend, "give_back", counted_give_back)
        if backend.rides is not None:  # Redis: the ADMIT and the last FINISH ride round trips
            self._riding(backend, monkeypatch)

    def _riding(self, backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        ride_admit, ride_finish = backend.ride_admit, backend.ride_finish

        def counted_ride_admit(a: Admission) -> Any:
            if self.before_admit is not None:  # held before it is sent: a task of its own
                return None
            rider = ride_admit(a)
            if rider is not None:
                self.ops.append("admit")
                rider.future.add_done_callback(self._landed)
            return rider

        def counted_ride_finish(a: Admission, tokens: int, nanos: int) -> Any:
            rider = ride_finish(a, tokens, nanos)
            if rider is not None:
                self.ops.append("release" if (tokens, nanos) == (0, 0) else "settle")
            return rider

        monkeypatch.setattr(backend, "ride_admit", counted_ride_admit)
        monkeypatch.setattr(backend, "ride_finish", counted_ride_finish)

    def _landed(self, future: Any) -> None:
        if not future.cancelled() and future.exception() is None:
            self.answers += 1
            self._answer.set()
            self._answer = anyio.Event()

    def model(self) -> ScriptedModel:
        def reply(request: ModelRequest) -> ModelResponse:
            self.requests.append(request)
            self.ops.append("request")
            return ModelResponse(content=[TextBlock(text="ok")], usage=USED)

        return ScriptedModel(reply, name="scripted-" + unique_namespace())

    async def answered(self, n: int = 1) -> None:
        while self.answers < n:
            await self._answer.wait()


def _after_load(
    agent: HarnessAgent, monkeypatch: pytest.MonkeyPatch, then: Callable[[], Awaitable[None]]
) -> None:
    """Run ``then()`` after the call's session load (before its first request)."""
    load = agent._load

    async def load_then(*args: Any) -> Any:
        found = await load(*args)
        await then()
        return found

    monkeypatch.setattr(agent, "_load", load_then)


def _agent(
    store: BaseStore, tmp_path: Path, seen: Seen, gov: UsageGovernor | None = None
) -> HarnessAgent:
    gov = gov or UsageGovernor(
        store, budgets={"session": Budget(max_tokens=10**9)}, rate_limit=NEVER_WAITS
    )
    return HarnessAgent(
        "a", seen.model(), store=store, workspace=tmp_path, usage=gov, builtin_tools=False,
        config=ReActConfig(stream_model=False),
    )  # fmt: skip


async def _scripts_known(store: BaseStore, tmp_path: Path) -> None:
    """A governed call first, so that the server knows every script a call runs (on a fresh
    server the first call of each is answered ``NOSCRIPT``: loaded, then sent again, alone)."""
    gov = UsageGovernor(store, budgets={"session": Budget(max_tokens=10**9)}, rate_limit=CLOCKED)
    agent = HarnessAgent(
        "w", ScriptedModel(["ok"]), store=store, workspace=tmp_path / "warm", usage=gov,
        builtin_tools=False, config=ReActConfig(stream_model=False),
    )  # fmt: skip
    await agent.call("hi", _ctx())


def _ctx() -> RuntimeContext:
    return RuntimeContext(session_id="s1", user_id="u", org_id=unique_namespace())


def _budget(ctx: RuntimeContext) -> str:
    return f"session:{ctx.org_id}/{ctx.user_id}/{ctx.session_id}"


async def _held(store: BaseStore, name: str) -> tuple[int, int]:
    """(settled tokens, reserved tokens) of budget ``name``, once every settle landed."""
    await flush(store)
    doc = await usage_backend(store).read(name)
    assert doc is not None, name
    return doc["ut"], doc["rt"]


def _counts() -> tuple[int, int, int]:
    c = early_mod.Counts
    return c.sent, c.taken, c.released


def _since(before: tuple[int, int, int]) -> tuple[int, int, int]:
    sent, taken, released = _counts()
    return sent - before[0], taken - before[1], released - before[2]


async def test_on_redis_the_admit_rides_the_session_lease_and_load(
    redis: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before the request the call made one round trip: the ``ADMIT`` and the lease + load in one
    socket write (riders, ``agentscope_teams.store._redis_riders``); the budget is left as the
    two round trips of its own left it."""
    await _scripts_known(redis, tmp_path)
    seen = Seen(redis, monkeypatch)
    agent = _agent(redis, tmp_path, seen)
    ctx = _ctx()
    trips: list[list[str]] = []
    before_request: list[list[list[str]]] = []
    client: Any = redis.client  # type: ignore[attr-defined]
    one, many, original = client.execute_command, client.execute_many, agent.loop.model.generate

    async def execute_command(*args: Any, **kw: Any) -> Any:
        trips.append([str(args[3])] if args[0] == "EVALSHA" else [str(args[0])])
        return await one(*args, **kw)

    async def execute_many(commands: Any) -> Any:
        trips.append([str(c[3]) for c in commands])
        return await many(commands)

    async def generate(request: ModelRequest) -> ModelResponse:
        before_request.append(list(trips))
        return await original(request)

    monkeypatch.setattr(client, "execute_command", execute_command)
    monkeypatch.setattr(client, "execute_many", execute_many)
    monkeypatch.setattr(agent.loop.model, "generate", generate)
    await agent.call("hi", ctx)
    [(admit, lease)] = before_request[0]  # one round trip before the request, both in it
    assert "usage/ledger" in admit and "leases/" in lease
    assert seen.ops == ["admit", "request", "settle"]
    assert await _held(redis, _budget(ctx)) == (40, 0)


@pytest.mark.parametrize("store_spec", STORES, indirect=True)
async def test_the_admit_is_sent_before_the_session_is_loaded(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load waits for the ``ADMIT`` to be sent: sent after the load, the call never ends."""
    seen = Seen(store, monkeypatch)
    agent = _agent(store, tmp_path, seen)
    admitting = anyio.Event()

    async def mark() -> None:
        admitting.set()

    seen.before_admit = mark
    load = agent._load

    async def load_after_the_admit(*args: Any) -> Any:
        await admitting.wait()
        return await load(*args)

    monkeypatch.setattr(agent, "_load", load_after_the_admit)
    ctx, before = _ctx(), _counts()
    with anyio.fail_after(20):
        await agent.call("hi", ctx)
    assert _since(before) == (1, 1, 0)
    assert seen.ops == ["admit", "request", "settle"]
    assert await _held(store, _budget(ctx)) == (40, 0)


@pytest.mark.parametrize("store_spec", ["file", "postgres", "redis"], indirect=True)
async def test_a_reservation_too_small_is_given_back_and_the_request_admits_as_before(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session this process has not seen, whose context is larger than the early estimate's
    allowance (another process wrote it); then, with the hint of that call, the next one fits."""
    seen = Seen(store, monkeypatch)
    agent = _agent(store, tmp_path, seen)
    ctx = _ctx()
    await agent.call("x" * (early_mod.SLACK_TOKENS * 6), ctx)  # a context larger than the slack
    await flush(store)
    early_mod._HINTS.clear()  # as if another process had served it
    seen.ops.clear()
    before = _counts()
    await agent.call("hi", ctx)
    assert _since(before) == (1, 0, 1)
    assert sorted(seen.ops) == ["admit", "admit", "release", "request", "settle"]
    assert seen.ops.index("request") > 1  # admitted again before the request
    assert await _held(store, _budget(ctx)) == (80, 0)
    seen.ops.clear()
    before = _counts()
    await agent.call("hi", ctx)  # this process has seen the session now: the early one fits
    assert _since(before) == (1, 1, 0)
    assert seen.ops == ["admit", "request", "settle"]
    assert await _held(store, _budget(ctx)) == (120, 0)


@pytest.mark.parametrize("store_spec", ["memory", "redis"], indirect=True)
async def test_a_turn_taken_too_long_before_the_request_is_given_back_and_taken_again(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load slower than ``TURN_AHEAD``: with a requests/min limit the early turn is released
    and the request takes its own; with a budget and a concurrency cap only, it is kept."""
    seen = Seen(store, monkeypatch)
    for limit, taken in ((CLOCKED, 0), (NEVER_WAITS, 1)):
        budgets = {"session": Budget(max_tokens=10**9)}
        gov = UsageGovernor(store, budgets=budgets, rate_limit=limit)
        agent = _agent(store, tmp_path, seen, gov)
        _after_load(agent, monkeypatch, lambda: anyio.sleep(early_mod.TURN_AHEAD * 2))
        ctx, before = _ctx(), _counts()
        seen.ops.clear()
        await agent.call("hi", ctx)
        assert _since(before) == (1, taken, 1 - taken), limit
        assert seen.ops.count("admit") == 2 - taken
        assert await _held(store, _budget(ctx)) == (40, 0)


@pytest.mark.parametrize("store_spec", ["sqlite", "redis"], indirect=True)
async def test_an_early_refusal_raises_nothing_the_request_admits_or_refuses_as_before(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held by another call in flight when the ``ADMIT`` goes early, given back before the request:
    the call goes on. Spent: the call fails with the error of the request's own admission."""
    seen = Seen(store, monkeypatch)
    ctx = _ctx()
    gov = UsageGovernor(store, budgets={"session": Budget(max_tokens=100)}, budget_wait=0)
    agent = _agent(store, tmp_path, seen, gov)
    backend = usage_backend(store)
    other = Admission((Limit(_budget(ctx), 100, None),), "other-call", 500, 0, None, Rates())
    assert (await backend.admit(other)).refusal is None  # the whole budget held by it
    answers = seen.answers

    async def other_call_ends() -> None:
        await seen.answered(answers + 1)  # the early ADMIT was answered: held, refused
        await backend.finish(other, 0, 0)

    load = agent._load
    _after_load(agent, monkeypatch, other_call_ends)
    before = _counts()
    seen.ops.clear()
    with anyio.fail_after(20):  # an ADMIT only after the load: no answer to wait for
        await agent.call("hi", ctx)
    assert _since(before) == (1, 0, 0)  # refused early: nothing to give back
    assert seen.ops == ["admit", "release", "admit", "request", "settle"]  # the other call's end
    monkeypatch.setattr(agent, "_load", load)
    await agent.call("x" * 300, ctx)  # 40 + 40 tokens settled: 80 of 100
    await agent.call("hi", ctx)  # 120: spent
    await flush(store)
    with pytest.raises(BudgetExceededError) as caught:
        await agent.call("hi", ctx)
    assert (caught.value.budget, caught.value.unit, caught.value.used) == (
        _budget(ctx),
        "tokens",
        120,
    )
    assert await _held(store, _budget(ctx)) == (120, 0)


@pytest.mark.parametrize("store_spec", ["memory", "redis"], indirect=True)
async def test_a_wait_for_a_turn_early_is_no_error_the_request_waits_its_turn(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another caller just took the limiter's turn: the early ``ADMIT`` is told to wait (nothing
    held), the request waits for its turn and goes."""
    seen = Seen(store, monkeypatch)
    limit = RateLimit(requests_per_minute=600, margin=0.0)
    budgets = {"session": Budget(max_tokens=10**9)}
    agent = _agent(store, tmp_path, seen, UsageGovernor(store, budgets=budgets, rate_limit=limit))
    key = limiter_key(agent.loop.model)  # a model of its own: a limiter of its own
    turn = Admission((), "other-turn", 1, 0, key, Rates(rpm=600), "-")
    assert (await usage_backend(store).admit(turn)).wait_ms == 0  # the next turn is 100 ms away
    ctx, before = _ctx(), _counts()
    await agent.call("hi", ctx)
    assert _since(before) == (1, 0, 0)
    assert seen.ops[:2] == ["admit", "admit"] and "request" in seen.ops
    assert await _held(store, _budget(ctx)) == (40, 0)


@pytest.mark.parametrize("store_spec", ["file", "redis"], indirect=True)
async def test_a_call_cancelled_before_its_request_leaves_nothing_reserved(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Cancelled while the load runs, once with the early ``ADMIT`` answered, once with it still
    in flight (it lands after the call ended): the reservation and the lease are given back."""
    seen = Seen(store, monkeypatch)
    for in_flight in (False, True):
        ctx, before = _ctx(), _counts()
        await _cancel_while_loading(_agent(store, tmp_path, seen), ctx, seen, in_flight)
        await flush(store)
        assert _since(before) == (1, 0, 1), in_flight
        assert seen.ops == ["admit", "release"], in_flight
        assert await _held(store, _budget(ctx)) == (0, 0)
        seen.ops.clear()


async def _cancel_while_loading(
    agent: HarnessAgent, ctx: RuntimeContext, seen: Seen, in_flight: bool
) -> None:
    """Cancel ``agent.call`` in its session load: after its early ``ADMIT`` was answered, or
    (``in_flight``) before it is sent; then let that ``ADMIT`` go."""
    loading, go_on = anyio.Event(), anyio.Event()
    seen.before_admit = go_on.wait if in_flight else None
    answers = seen.answers

    async def never_loads(*args: Any) -> Any:
        loading.set()
        await anyio.sleep_forever()

    agent._load = never_loads  # type: ignore[method-assign]
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(agent.call, "hi", ctx)
            await loading.wait()
            if not in_flight:
                await seen.answered(answers + 1)
            tg.cancel_scope.cancel()
        assert seen.answers == answers + (0 if in_flight else 1)
        go_on.set()  # the ADMIT lands now, after the call ended


#: One request a second, no margin: a turn taken and not given back delays the next by a second.
PER_SECOND = RateLimit(requests_per_minute=60, margin=0.0)


def _clocked_agent(
    store: BaseStore, tmp_path: Path, seen: Seen, limit: RateLimit, monkeypatch: pytest.MonkeyPatch
) -> tuple[HarnessAgent, str]:
    """An agent of a model (and so a limiter) of its own whose session load is slower than
    ``TURN_AHEAD``: its early turn is released before the request admits; and its limiter."""
    budgets = {"session": Budget(max_tokens=10**9)}
    agent = _agent(store, tmp_path, seen, UsageGovernor(store, budgets=budgets, rate_limit=limit))
    _after_load(agent, monkeypatch, lambda: anyio.sleep(early_mod.TURN_AHEAD * 2))
    return agent, limiter_key(agent.loop.model)


@pytest.mark.parametrize("store_spec", STORES, indirect=True)
async def test_a_released_early_turn_is_given_back_the_request_takes_it_at_once(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At one request a second, the early turn released (taken too long before the request) is
    undone: the request is admitted by its first ``ADMIT``, not a second later by its second."""
    seen = Seen(store, monkeypatch)
    agent, _ = _clocked_agent(store, tmp_path, seen, PER_SECOND, monkeypatch)
    ctx, before = _ctx(), _counts()
    await agent.call("hi", ctx)
    assert _since(before) == (1, 0, 1)
    assert seen.ops == ["admit", "release", "admit", "request", "settle"]
    assert await _held(store, _budget(ctx)) == (40, 0)


@pytest.mark.parametrize("store_spec", STORES, indirect=True)
async def test_a_released_early_turn_after_another_callers_turn_gives_nothing_back(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another caller takes a turn between the early ``ADMIT`` and its release: the early turn
    stays spent (undoing it would undo the other's), so the request, the third turn of a bucket of
    two, waits for it."""
    seen = Seen(store, monkeypatch)
    limit = RateLimit(requests_per_minute=60, burst=2, margin=0.0)
    agent, key = _clocked_agent(store, tmp_path, seen, limit, monkeypatch)
    other = Admission((), "other-turn", 1, 0, key, Rates(rpm=60, burst=2), "other")
    answers = seen.answers

    async def another_turn() -> None:
        await seen.answered(answers + 1)  # the early ADMIT took its turn
        assert (await usage_backend(store).admit(other)).wait_ms == 0

    _after_load(agent, monkeypatch, another_turn)
    await agent.call("hi", _ctx())
    # the early ADMIT, the other's, the release; the request told to wait, then admitted
    assert seen.ops == ["admit", "admit", "release", "admit", "admit", "request", "settle"]


@pytest.mark.parametrize("store_spec", ["memory", "postgres", "redis"], indirect=True)
async def test_a_sent_request_that_failed_still_counts_its_turn(
    store: BaseStore, store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider failed the request: it was sent, its turn stays spent (only its reservation
    and lease are given back), so the next turn is a second away."""
    seen = Seen(store, monkeypatch)
    budgets = {"session": Budget(max_tokens=10**9)}
    gov = UsageGovernor(store, budgets=budgets, rate_limit=PER_SECOND)

    def fail(request: ModelRequest) -> ModelResponse:
        seen.ops.append("request")
        raise RuntimeError("provider down")

    model = ScriptedModel(fail, name="scripted-" + unique_namespace())
    agent = HarnessAgent(
        "a", model, store=store, workspace=tmp_path, usage=gov, builtin_tools=False,
        config=ReActConfig(stream_model=False),
    )  # fmt: skip
    ctx = _ctx()
    with pytest.raises(Exception, match="provider down"):
        await agent.call("hi", ctx)
    assert seen.ops.count("request") == 1 and seen.ops[-2:] == ["request", "release"]
    probe = Admission((), "probe", 1, 0, limiter_key(model), Rates(rpm=60), "probe")
    assert (await usage_backend(store).admit(probe)).wait_ms > 0
    assert await _held(store, _budget(ctx)) == (0, 0)


async def test_an_early_admit_whose_reply_is_lost_is_given_back(
    redis: BaseStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Riders off (as on a cluster): the early ``ADMIT`` is a task of its own, which the server
    runs but whose reply is lost. Whether it reserved is unknown: it is given back (harmless if
    it did not), and the request admits as before."""
    from agentscope_teams.errors import StoreUnavailableError

    monkeypatch.setattr(redis, "_rides", False)
    seen = Seen(redis, monkeypatch)
    agent = _agent(redis, tmp_path, seen)
    client: Any = redis.client  # type: ignore[attr-defined]
    one, sha = client.execute_command, usage_backend(redis)._admit.sha  # type: ignore[attr-defined]
    lost: list[bool] = []

    async def execute_command(*args: Any, **kw: Any) -> Any:
        reply = await one(*args, **kw)
        if args[:2] == ("EVALSHA", sha) and not lost:
            lost.append(True)
            raise StoreUnavailableError("the connection dropped before the reply was read")
        return reply

    monkeypatch.setattr(client, "execute_command", execute_command)
    ctx, before = _ctx(), _counts()
    await agent.call("hi", ctx)
    assert lost and await _held(redis, _budget(ctx)) == (40, 0)
    assert _since(before) == (1, 0, 1)
