"""What a wake-up costs: the runtime's step reads the team record once (the board and the inbox
straight from the store), and a member woken again and again for nothing keeps a bounded session
(its idle exchanges compacted, :mod:`agentscope_teams.teams.member.chatter`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import Msg, TextBlock, ToolUseBlock, UserMsg
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import BaseStore, InMemoryStore
from agentscope_teams.teams import (
    LocalTeamClient,
    Member,
    MemberBuilder,
    TeamKeys,
    TeamRef,
    TeamRuntime,
    board_reads,
    registry,
)
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.member import chatter
from agentscope_teams.teams.member.builder import load_pool, member_session_id
from agentscope_teams.teams.member.runtime import STEP_BURST, STEP_SPACING, _Pace
from agentscope_teams.teams.member.work import WAKE
from agentscope_teams.teams.queues import redis as queue_redis
from agentscope_teams.teams.queues.redis import RedisBoardQueue
from agentscope_teams.teams.rules.models import MemberStatus, TeamStatus

from ..backends import StoreSpec
from .board_paths import native_spec
from .helpers import SPEC_DIR
from .round_trips import board_call, count_round_trips

pytestmark = pytest.mark.anyio


def _runtime(
    store: BaseStore,
    tmp_path: Path,
    ctx: RuntimeContext,
    team_id: str,
    model: Any,
    client_factory: Any = LocalTeamClient,
) -> TeamRuntime:
    """A runtime serving ``team_id`` whose supervisor is not started: the test steps it."""
    runtime = TeamRuntime(store, lease_ttl=5.0, poll=30.0)
    builder = MemberBuilder(
        store=store,
        specs=load_pool(SPEC_DIR),
        client_factory=client_factory,
        workspace=tmp_path,
        root=tmp_path,
        model=model,
    )
    ref = TeamRef(ctx, team_id, builder)
    runtime.refs[ref.key] = ref
    return runtime


async def _calls_end(runtime: TeamRuntime) -> None:
    with anyio.fail_after(10):  # a guard, not a latency assertion
        for slot in list(runtime.slots.values()):
            while slot.busy:  # noqa: ASYNC110 - polls a plain attribute
                await anyio.sleep(0.01)


@pytest.fixture(params=["redis"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    return native_spec(request, tmp_path)


async def test_a_wake_up_step_reads_everything_in_one_round(
    store_spec: StoreSpec, tmp_path: Path
) -> None:
    """The step that finds a newly assigned task: the team record with the member's cursor and
    its inbox after the cursor the previous step saw (one pipeline), and the open board (the
    first page of its pending and held tasks, one script call), both sent before either answered
    (held until the two were sent: sent one after the other, the step would never end); then the
    member's lease. Three round trips, two in sequence."""
    async with store_spec.open() as store:
        ctx = RuntimeContext(session_id="lead", user_id="wake-cost")
        lead = LocalTeamClient(store, ctx)
        team = await lead.create_team("wake")
        await lead.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "w"))
        runtime = _runtime(store, tmp_path, ctx, team.id, ScriptedModel(lambda _: "done"))
        try:
            await runtime.step()  # nothing to do yet (the scripts are loaded, the members known)
            await lead.assign_task(team.id, "review a.py", assignee="reviewer")
            async with count_round_trips(store, pipelines=True, gate=2) as counter:
                with anyio.fail_after(10):  # a guard, not a latency assertion
                    await runtime.step()  # finds the task, takes the lease, launches the call
            named = [f"{c} {_kind(k)}" for c, k in zip(counter.seen, counter.keys, strict=True)]
            board = f"{board_call(store)} board"  # FCALL: the queue's Redis functions
            # before (issue 26's h-wake3): the record, then the board beside the cursor, then the
            # inbox after the cursor: three reads in sequence; before h-wake5 the record and the
            # cursors were two reads of the round (an HMGET, a pipeline); before h-wake6 the
            # inbox page was a third (an XRANGE of its own)
            assert sorted(named[:2]) == [board, "PIPELINE HMGET XRANGE team"], named
            # before issue 26's h-wake4: the board's held page, then the lease
            assert named[2:] == ["EVALSHA member-lease"], named
            await _calls_end(runtime)
        finally:
            await runtime.aclose()


async def test_a_member_woken_for_nothing_keeps_a_bounded_session(tmp_path: Path) -> None:
    """Woken six times for tasks it answers with text only, the member's session keeps its
    latest exchanges, not six: the model sees the same few messages at every wake-up."""
    store = InMemoryStore()
    ctx = RuntimeContext(session_id="lead", user_id="wake-chatter")
    lead = LocalTeamClient(store, ctx)
    team = await lead.create_team("wake")
    session = member_session_id(team.id, "w")
    await lead.spawn_member(team.id, "reviewer", "reviewer", session)
    seen: list[int] = []

    def member(request: ModelRequest) -> str:
        seen.append(len(request.messages))
        return "nothing for me"

    runtime = _runtime(store, tmp_path, ctx, team.id, ScriptedModel(member))
    try:
        for i in range(6):
            await lead.assign_task(team.id, f"review {i}.py", assignee="reviewer")
            await runtime.step()
            await _calls_end(runtime)
        (slot,) = runtime.slots.values()
        assert slot.agent is not None
        record = await slot.agent.sessions.get_at(slot.agent.address(ctx.with_session(session)))
    finally:
        await runtime.aclose()
    assert len(seen) == 6
    assert seen[2:] == [seen[1]] * 4, seen  # bounded from the second wake-up on
    # the last two exchanges: the one before is dropped when the next call begins
    assert record is not None and len(record.state.context) == 4


def _claims_then_completes(request: ModelRequest) -> Any:
    last = request.messages[-1] if request.messages else None
    results = last.tool_results() if last is not None else []
    if not results:
        return ScriptedModel.tool_call("claimTask", {})
    if results[-1].name == "claimTask":
        task_id = results[-1].output.split("Claimed task ", 1)[-1].split()[0].rstrip(".:")
        return ScriptedModel.tool_call("completeTask", {"task_id": task_id, "result": "ok"})
    return "done"


async def _wake_for_assigned_task(
    store_spec: StoreSpec, tmp_path: Path, user: str, model: Any, client: Any = LocalTeamClient
) -> tuple[Any, list[str], str]:
    """A reviewer woken by a task assigned to it, stepped until its calls end: the task after,
    the store commands of the wake-up step, each named by its kind of key, and the name of a
    board script's call among them."""
    async with store_spec.open() as store:
        ctx = RuntimeContext(session_id="lead", user_id=user)
        lead = LocalTeamClient(store, ctx)
        team = await lead.create_team("wake")
        await lead.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "w"))
        runtime = _runtime(store, tmp_path, ctx, team.id, model, client)
        try:
            await runtime.step()
            await lead.assign_task(team.id, "review a.py", assignee="reviewer")
            async with count_round_trips(store, pipelines=True) as counter:
                await runtime.step()
                await _calls_end(runtime)
            task = (await lead.list_tasks(team.id))[0]
        finally:
            await runtime.aclose()
        board = f"{board_call(store)} board"
    named = [f"{c} {_kind(k)}" for c, k in zip(counter.seen, counter.keys, strict=True)]
    return task, named, board


async def test_a_woken_member_claims_before_its_session_is_saved(
    store_spec: StoreSpec, tmp_path: Path
) -> None:
    """From the step that finds the task to the member's committed claim: the step's reads, the
    member's lease, its status beside its session lease (which reads the session with it on
    Redis: one script, no separate load), the claim. No save
    comes between the load and the claim (claimTask is idempotent: a crash there only has the
    model claim again, and gets it the task it holds)."""
    model = ScriptedModel(_claims_then_completes)
    task, named, board = await _wake_for_assigned_task(store_spec, tmp_path, "wake-claim", model)
    assert task.status.value == "completed"
    scripts = [i for i, n in enumerate(named) if n == board]
    to_claim = named[: scripts[1] + 1]  # the step's board read, then the claim
    # the step: the team record once with the cursor and the inbox page (one pipeline; before
    # issue 26's h-wake5 an HMGET, a pipeline and an XRANGE), the board (both first pages: one
    # script; before h-wake4 two) beside it, the member lease;
    # the call: its status (written from the step's record: no read) beside the session lease
    # that reads the session with it (before issue 26's h-wake2: a separate HMGET after it), the
    # claim (one script: its team guard is the status write's record)
    assert sorted(to_claim) == sorted(
        [
            "PIPELINE HMGET XRANGE team",  # the inbox page too (before issue 26's h-wake6: alone)
            board,
            "EVALSHA member-lease",
            "EVALSHA team",
            "EVALSHA session-lease",
            board,
        ]
    ), named


class _HeldStatus(LocalTeamClient):
    """A member's client whose ``running`` status write waits until the model was asked."""

    asked: anyio.Event
    statuses: list[str]  # the writes ended, and those that gave up waiting for the model

    async def set_member_status(self, team_id: str, name: str, status: MemberStatus) -> Member:
        if status is MemberStatus.RUNNING:
            with anyio.move_on_after(3):  # a guard, not a latency assertion
                await _HeldStatus.asked.wait()
            if not _HeldStatus.asked.is_set():
                _HeldStatus.statuses.append("gave up waiting for the model")
        member = await super().set_member_status(team_id, name, status)
        _HeldStatus.statuses.append(status.value)
        return member


async def test_the_model_is_asked_beside_the_status_write_and_the_claim_waits_for_it(
    store_spec: StoreSpec, tmp_path: Path
) -> None:
    """The member's ``running`` status write runs beside its session's load and its model's
    first request: the request does not wait for it (held here until the model was asked; before
    issue 26's h-wake5 the first step waited, so this never ended); the member's claim does, so
    its team guard is the record that write returned: one claim script, no read of the team."""
    _HeldStatus.asked, _HeldStatus.statuses = anyio.Event(), []
    at_request: list[list[str]] = []

    def member(request: ModelRequest) -> Any:
        at_request.append(list(_HeldStatus.statuses))
        _HeldStatus.asked.set()
        return _claims_then_completes(request)

    model = ScriptedModel(member)
    task, named, board = await _wake_for_assigned_task(
        store_spec, tmp_path, "wake-status", model, _HeldStatus
    )
    assert task.status.value == "completed" and task.owner == "reviewer"
    assert at_request[0] == []  # asked before the status was written
    claim = [i for i, n in enumerate(named) if n == board][1]
    # the status written before the claim, the claim's guard current: no team read, one script
    assert named[: claim + 1].count("EVALSHA team") == 1, named
    assert "HMGET team" not in named[:claim] and named.count(board) == 3, named


class _TeamEndsFirst(LocalTeamClient):
    """A member's client whose team ends just before its ``running`` status write."""

    async def set_member_status(self, team_id: str, name: str, status: MemberStatus) -> Member:
        if status is MemberStatus.RUNNING:
            await self.set_team_status(team_id, TeamStatus.COMPLETED)
        return await super().set_member_status(team_id, name, status)


async def test_a_member_whose_team_ended_before_its_status_write_stops_its_call(
    store_spec: StoreSpec, tmp_path: Path
) -> None:
    """The team refuses the member's ``running`` write (it ended after the step read it): the
    call is cancelled, so its model request, sent beside that write, is not waited for (this
    model never answers: without the cancel the call never ends) and nothing claims the task."""

    class Silent(ScriptedModel):
        async def generate(self, request: ModelRequest) -> Any:
            await anyio.sleep_forever()

    # its runtime's calls must end: after 10 s it fails if the call waits for the model
    task, _, _ = await _wake_for_assigned_task(
        store_spec, tmp_path, "wake-ended", Silent([]), _TeamEndsFirst
    )
    assert task.status.value == "pending" and task.owner is None


@pytest.fixture(params=["postgres"])
def postgres_spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    return native_spec(request, tmp_path)


async def test_on_postgres_a_woken_member_takes_its_session_in_one_statement(
    postgres_spec: StoreSpec, tmp_path: Path
) -> None:
    """The statements from the step that finds the task to the member's committed claim on
    PostgreSQL: the step's two reads (the team record, the cursors and the inbox page in one
    ``SELECT``; before issue 26's h-pgwake the page was a statement of its own, and before
    h-wake5 the cursors too), the member lease, then the session lease that reads the session
    with it (one call of the schema's function; before h-wake4 an ``INSERT``, then a ``SELECT``)
    beside the status, then the claim. All but the member lease (a first wake-up's) are sent on
    the driver's connection (before h-pgwake the record, the board, the inbox and the status
    went through SQLAlchemy)."""
    async with postgres_spec.open() as store:
        lead, team, runtime = await _reviewer_team(store, tmp_path, "wake-claim-pg")
        try:
            await runtime.step()
            await lead.assign_task(team.id, "review a.py", assignee="reviewer")
            async with count_round_trips(store) as counter:
                await runtime.step()
                await _calls_end(runtime)
        finally:
            await runtime.aclose()
    kinds = [_statement_kind(s) for s in counter.statements]
    to_claim = kinds[: kinds.index("claim") + 1]
    assert sorted(to_claim) == sorted(
        [
            "record + cursors + inbox",  # one statement (before h-pgwake: two; h-wake5: three)
            "board",
            "member lease",
            "session lease + load",
            "status",
            "claim",
        ]
    ), counter.statements
    through_sqlalchemy = [k for i, k in enumerate(to_claim) if i not in counter.on_driver]
    assert through_sqlalchemy == ["member lease"], counter.statements


async def test_on_postgres_a_second_wake_up_sends_five_statements_on_the_driver(
    postgres_spec: StoreSpec, tmp_path: Path
) -> None:
    """A member woken a second time (its member lease kept from the first): from the step to
    its committed claim five statements, every one on the driver's connection, none through
    SQLAlchemy: the step's round (record, cursors and inbox page in one ``SELECT``, the board
    beside it), the session lease + load beside the ``running`` status write, the claim. Before
    issue 26's h-pgwake: six, four of them through SQLAlchemy (the record and cursors, the
    board, the inbox page, the status)."""
    async with postgres_spec.open() as store:
        lead, team, runtime = await _reviewer_team(store, tmp_path, "wake-again-pg")
        try:
            await runtime.step()
            await lead.assign_task(team.id, "review a.py", assignee="reviewer")
            await runtime.step()
            await _calls_end(runtime)
            await runtime.step()  # the member is idle again, its lease kept
            await lead.assign_task(team.id, "review b.py", assignee="reviewer")
            async with count_round_trips(store) as counter:
                await runtime.step()
                await _calls_end(runtime)
            tasks = await lead.list_tasks(team.id)
        finally:
            await runtime.aclose()
    assert [t.status.value for t in tasks] == ["completed", "completed"]
    kinds = [_statement_kind(s) for s in counter.statements]
    to_claim = kinds[: kinds.index("claim") + 1]
    assert sorted(to_claim[:2]) == ["board", "record + cursors + inbox"], counter.statements
    assert sorted(to_claim[2:]) == ["claim", "session lease + load", "status"], to_claim
    assert counter.on_driver >= set(range(len(to_claim))), counter.statements


async def _reviewer_team(store: Any, tmp_path: Path, user: str) -> tuple[LocalTeamClient, Any, Any]:
    """A lead of ``user``, its team with the member ``reviewer``, and the team's runtime whose
    model claims the task it is given and completes it."""
    ctx = RuntimeContext(session_id="lead", user_id=user)
    lead = LocalTeamClient(store, ctx)
    team = await lead.create_team("wake")
    await lead.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "w"))
    runtime = _runtime(store, tmp_path, ctx, team.id, ScriptedModel(_claims_then_completes))
    return lead, team, runtime


def _statement_kind(statement: str) -> str:
    """What a statement of the PostgreSQL wake-up does, from its text."""
    text = " ".join(statement.split())
    for start, kind in (
        ("SELECT * FROM ast_create_then_get(", "session lease + load"),
        ("WITH own AS", "claim"),
        ("INSERT INTO ast_kv ", "member lease"),
        ("UPDATE ast_kv ", "status"),
    ):
        if text.startswith(start):
            return kind
    if text.startswith("SELECT CAST(NULL AS integer) AS page,") and "FROM ast_stream " in text:
        return "record + cursors + inbox"
    for part, kind in (("FROM ast_task ", "board"), ("FROM ast_stream ", "inbox")):
        if part in text:
            return kind
    if text.startswith("SELECT ast_kv.khash,") and " IN (" in text:
        return "record + cursors"
    return "record" if text.startswith("SELECT ast_kv.version,") else text[:40]


@pytest.mark.parametrize("declared", [False, True], ids=["standalone", "declared"])
async def test_the_open_board_reads_both_first_pages_in_one_call(
    store_spec: StoreSpec, monkeypatch: pytest.MonkeyPatch, declared: bool
) -> None:
    """The open board's listing on Redis: the first page of the pending and of the held tasks in
    one script call (before issue 26's h-wake4: one each), a further page only after a full one,
    and every open task once, as the generic listing has them (``declared``: the records named
    in KEYS, as on a cluster, so the script asks for them first)."""
    monkeypatch.setattr(queue_redis, "OPEN_STANDALONE", not declared)
    async with store_spec.open() as store:
        client = LocalTeamClient(store, RuntimeContext(session_id="lead", user_id="wake-page"))
        team = await client.create_team("crew", members=[Member(name="a")])
        keys = TeamKeys(client.ctx.owner_scope(), team.id)
        board = TaskBoard(store, keys, client.clock, native=True)
        for i in range(5):
            await board.create("lead", f"task {i}")
        held = [await board.claim_next("a", 30) for _ in range(2)]
        queue = board.queue
        assert isinstance(queue, RedisBoardQueue)
        expected = sorted(t.id for t in await TaskBoard(store, keys, client.clock).open_tasks())
        counts = []
        for page in (1000, 3, 2):  # both pages short; the pending one full; both full
            monkeypatch.setattr(queue_redis, "PAGE", page)
            async with count_round_trips(store) as counter:
                listed = await queue.open_tasks()
            counts.append(counter.count)
            assert sorted(i for i, _ in listed) == expected
            assert [i for i, _ in listed[-2:]] == [t.id for t in held if t is not None]
    assert len(expected) == 5
    if not declared:  # pages: 3 pending + 2 held; (2+2) + 1 pending; (2+2) + (1+0)
        assert counts == [1, 2, 2]


def _kind(name: str) -> str:
    """What a Redis key of these tests holds, from its name."""
    for part, kind in (
        ("{sessions/", "session"),
        ("{leases/", "session-lease"),
        ("{team-member-lease/", "member-lease"),
        ("/open:queue", "board"),
        ("/cursor/", "cursor"),
        ("/inbox/", "inbox"),
        ("/signal", "signal"),
        ("/team", "team"),
    ):
        if part in name:
            return kind
    return name


def test_a_wake_up_after_an_idle_period_steps_at_once_and_a_burst_is_spaced() -> None:
    """The supervisor's pace (times given, no clock): up to STEP_BURST steps back to back, then
    one per STEP_SPACING; after a quiet spell the next step waits for nothing."""
    pace = _Pace()
    assert [pace.wait(1.0) for _ in range(STEP_BURST)] == [0.0] * STEP_BURST
    assert pace.wait(1.0) == pytest.approx(STEP_SPACING)  # the burst is spaced from here on
    assert pace.wait(1.0 + STEP_SPACING) == pytest.approx(STEP_SPACING)
    assert pace.wait(5.0) == 0.0  # idle for seconds: at once


async def test_a_signal_starts_the_step_two_turns_of_the_event_loop_later(tmp_path: Path) -> None:
    """From a team's signal to the supervisor's step: the listener's wait returns, it nudges the
    supervisor before its task group ends, and the supervisor steps in the turn it wakes (no
    ``sleep(0)`` after a quiet spell). Counted in event loop turns (a task that yields once per
    turn), not timed: two, the listener's and the supervisor's (before issue 26's h-wake5: five,
    the nudge after the listener's group ended and a pacing ``sleep(0)``)."""
    store = InMemoryStore()
    ctx = RuntimeContext(session_id="lead", user_id="wake-turns")
    lead = LocalTeamClient(store, ctx)
    team = await lead.create_team("wake")
    runtime = _runtime(store, tmp_path, ctx, team.id, ScriptedModel(lambda _: "done"))
    turns, at_step = [0], []
    step = runtime.step

    async def counted_step() -> None:
        at_step.append(turns[0])
        await step()

    async def tick() -> None:
        while True:
            turns[0] += 1
            await asyncio.sleep(0)

    runtime.step = counted_step  # type: ignore[method-assign]
    channel = TeamKeys(ctx.owner_scope(), team.id).signal()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(tick)
            runtime.start()
            with anyio.fail_after(10):  # a guard, not a latency assertion
                while channel not in runtime.listening or not at_step:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                await anyio.sleep(0.05)  # the first step ended; the listener waits again
                stepped = len(at_step)
                await store.signal(channel)
                signalled = turns[0]
                while len(at_step) == stepped:
                    await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()
    finally:
        await runtime.aclose()
    assert at_step[stepped] - signalled == 2


async def test_a_second_wake_up_builds_no_board(
    store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime's step and the member's client keep each team's board: a member woken a
    second time to claim and complete a task builds no board (before issue 26's h-wake5: one for
    the step, one for the claim and one for the completion, each deriving the queue's key names:
    ~64 µs apiece on Redis)."""
    async with store_spec.open() as store:
        ctx = RuntimeContext(session_id="lead", user_id="wake-boards")
        lead = LocalTeamClient(store, ctx)
        team = await lead.create_team("wake")
        await lead.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "w"))
        runtime = _runtime(store, tmp_path, ctx, team.id, ScriptedModel(_claims_then_completes))
        built: list[TeamKeys] = []
        queue_of = board_reads.board_queue_of

        def counted(store: BaseStore, keys: TeamKeys, *args: Any, **kwargs: Any) -> Any:
            built.append(keys)
            return queue_of(store, keys, *args, **kwargs)

        monkeypatch.setattr(board_reads, "board_queue_of", counted)
        try:
            for i in range(2):
                await lead.assign_task(team.id, f"review {i}.py", assignee="reviewer")
                first = len(built)
                await runtime.step()
                await _calls_end(runtime)
            second = built[first:]  # the second wake-up's step and call
            tasks = await lead.list_tasks(team.id)
        finally:
            await runtime.aclose()
    assert [t.status.value for t in tasks] == ["completed", "completed"]
    assert second == []


async def test_a_step_decodes_the_team_record_only_once_it_changed(
    store_spec: StoreSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime keeps the team record its previous step decoded with the bytes it came from:
    a step that reads the same bytes (a wake-up for a task: the board changed, not the team)
    decodes no record; one that reads a changed record decodes it (before issue 26's h-wake6:
    one decode per step, ~50 µs on Redis)."""
    async with store_spec.open() as store:
        ctx = RuntimeContext(session_id="lead", user_id="wake-decode")
        lead = LocalTeamClient(store, ctx)
        team = await lead.create_team("wake")
        await lead.spawn_member(team.id, "reviewer", "reviewer", member_session_id(team.id, "w"))
        runtime = _runtime(store, tmp_path, ctx, team.id, ScriptedModel(lambda _: "done"))
        decoded: list[str] = []
        decode = registry._decoded

        def counted(entry: Any) -> Any:
            decoded.append(entry.value.decode()[:20] if entry is not None else "none")
            return decode(entry)

        monkeypatch.setattr(registry, "_decoded", counted)
        try:
            await runtime.step()  # the first read: decoded
            first = len(decoded)
            await lead.assign_task(team.id, "review a.py", assignee="reviewer")
            before = len(decoded)
            await runtime.step()  # the same record: not decoded; the call starts
            unchanged = len(decoded) - before
            await _calls_end(runtime)
            await lead.spawn_member(team.id, "tester", "reviewer")  # the record changes
            before = len(decoded)
            await runtime.step()
            changed = len(decoded) - before
        finally:
            await runtime.aclose()
    assert first == 1 and unchanged == 0 and changed == 1, decoded


def test_compacting_a_working_session_judges_no_answer() -> None:
    """Before each call the member's context is scanned for idle exchanges (a wake-up prompt, a
    plain answer, the next prompt): one look at each message for the prompts, and an answer is
    judged only between two prompts two apart. A session of wake-ups that worked (tool calls
    between the prompts) has none to judge (before issue 26's h-wake6: one per prompt, each
    message looked at three times)."""
    wake = {WAKE: {"own": [], "free": ["t"]}}
    state = AgentState(session_id="s")
    for i in range(20):
        state.context += [
            UserMsg(f"work {i}", name="team", metadata=wake),
            Msg(
                role="assistant",
                name="m",
                content=[ToolUseBlock(id=f"c{i}", name="claimTask", input={})],
            ),
            Msg(role="assistant", name="m", content=[TextBlock(text="done")]),
        ]
    judged: list[Msg] = []
    plain = chatter._plain_answer

    def counted(msg: Msg) -> bool:
        judged.append(msg)
        return plain(msg)

    chatter._plain_answer = counted  # type: ignore[assignment]
    try:
        assert chatter.compact_idle(state) == 0 and len(state.context) == 60
    finally:
        chatter._plain_answer = plain  # type: ignore[assignment]
    assert judged == []


async def test_the_listener_reads_the_teams_served_only_once_they_changed(tmp_path: Path) -> None:
    """Woken by a team's signal again and again, the listener waits on the channels it read
    before: it reads the set of teams served again only when ``watch`` or a step marked it
    changed (before issue 26's h-wake6: after every signal, ~12 µs a read on the wake-up's path)."""
    store = InMemoryStore()
    ctx = RuntimeContext(session_id="lead", user_id="wake-listen")
    lead = LocalTeamClient(store, ctx)
    team = await lead.create_team("wake")
    runtime = _runtime(store, tmp_path, ctx, team.id, ScriptedModel(lambda _: "done"))
    reads: list[int] = []
    channels_of = runtime._channels

    def counted() -> Any:
        reads.append(runtime.steps)
        return channels_of()

    runtime._channels = counted  # type: ignore[method-assign]
    channel = TeamKeys(ctx.owner_scope(), team.id).signal()
    try:
        runtime.start()
        with anyio.fail_after(10):  # a guard, not a latency assertion
            while channel not in runtime.listening or not runtime.steps:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            await anyio.sleep(0.05)
            before, steps = len(reads), runtime.steps
            for i in range(5):
                await store.signal(channel)
                while runtime.steps < steps + i + 1:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
    finally:
        await runtime.aclose()
    assert len(reads) == before, reads
