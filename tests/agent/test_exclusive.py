"""One call per session at a time: in-process lock, store lease across instances and processes,
busy timeouts, expiry of a killed holder's lease, fencing of a holder whose lease was taken over."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams.agent import hitl as hitl_mod
from agentscope_teams.errors import SessionBusyError, VersionConflict
from agentscope_teams.model import ScriptedModel
from agentscope_teams.sessions import session_key
from agentscope_teams.store import InMemoryStore
from agentscope_teams.store.base import Key

from . import helpers
from .conftest import SetupFactory
from .helpers import Setup, StoreArgs, orphans, read_log, results_of


def slow(label: str, seconds: float = 0.3) -> str:
    return "use slow " + json.dumps({"label": label, "seconds": seconds})


def block(label: str, gate: Path | None = None) -> str:
    return "use block " + json.dumps({"label": label, "gate": str(gate or "")})


def lease_key(setup: Setup) -> Key:
    key = session_key(setup.org_id, setup.user_id, setup.agent_name, setup.session_id)
    return ("leases", *key[1:])


def intervals(log: Path) -> dict[str, tuple[float, float]]:
    seen: dict[str, dict[str, float]] = {}
    for entry in read_log(log):
        seen.setdefault(entry["label"], {})[entry["event"]] = entry["t"]
    return {label: (e["start"], e["end"]) for label, e in seen.items()}


def assert_disjoint(spans: dict[str, tuple[float, float]]) -> None:
    ordered = sorted(spans.values())
    for (_, end), (start, _) in itertools.pairwise(ordered):
        assert end <= start, f"tool runs overlap: {spans}"


def assert_both_turns_kept(state: Any, labels: list[str]) -> None:
    texts = [m.get_text_content() for m in state.context]
    for label in labels:
        assert f"done: slept {label}" in texts
    assert len(state.context) == 4 * len(labels) and orphans(state.context) == ([], [])


async def wait_for_start(log: Path) -> None:
    with anyio.fail_after(60):
        while not any(e["event"] == "start" for e in read_log(log)):  # noqa: ASYNC110
            await anyio.sleep(0.01)


# -- in one process -----------------------------------------------------------------------------


async def test_calls_on_one_session_queue_in_process(make_setup: SetupFactory) -> None:
    setup = make_setup(StoreArgs("memory://"))
    agent = helpers.build_agent(setup, InMemoryStore())
    async with anyio.create_task_group() as tg:
        for label in ("a", "b", "c"):
            tg.start_soon(agent.call, slow(label, 0.05), setup.ctx)
    assert setup.log is not None
    assert_disjoint(intervals(setup.log))
    assert_both_turns_kept(await agent.get_agent_state(setup.ctx), ["a", "b", "c"])


async def test_two_agent_instances_serialize_through_the_store_lease(
    shared_args: StoreArgs, make_setup: SetupFactory
) -> None:
    setup = make_setup(shared_args)
    async with shared_args.open() as s1, shared_args.open() as s2:
        first, second = helpers.build_agent(setup, s1), helpers.build_agent(setup, s2)
        async with anyio.create_task_group() as tg:
            tg.start_soon(first.call, slow("one", 0.2), setup.ctx)
            tg.start_soon(second.call, slow("two", 0.2), setup.ctx)
        assert setup.log is not None
        assert_disjoint(intervals(setup.log))
        assert_both_turns_kept(await first.get_agent_state(setup.ctx), ["one", "two"])


async def test_the_heartbeat_keeps_a_long_call_s_lease_past_its_ttl(
    file_args: StoreArgs, make_setup: SetupFactory, tmp_path: Path
) -> None:
    setup = make_setup(file_args, lease_ttl=1.2)
    gate = tmp_path / "gate"
    async with file_args.open() as store:
        holder, other = helpers.build_agent(setup, store), helpers.build_agent(setup, store)
        other.busy_timeout = 0

        async def renewals() -> int:
            entry = await store.get(lease_key(setup))
            return 0 if entry is None else entry.version

        async with anyio.create_task_group() as tg:
            tg.start_soon(holder.call, block("long", gate), setup.ctx)
            with anyio.fail_after(60):
                while await renewals() < 5:  # noqa: ASYNC110 - four renewals: more than one TTL
                    await anyio.sleep(0.05)
            with pytest.raises(SessionBusyError):
                await other.call("me too", setup.ctx)
            gate.touch()
        assert await store.get(lease_key(setup)) is None  # released at the end
        state = await holder.get_agent_state(setup.ctx)
    assert state.context[-1].get_text_content() == "done: unblocked long"


@pytest.mark.parametrize("where", ["same-agent", "other-agent"])
async def test_a_waiter_past_busy_timeout_gets_session_busy_error(
    where: str, file_args: StoreArgs, make_setup: SetupFactory, tmp_path: Path
) -> None:
    setup = make_setup(file_args, busy_timeout=0.2)
    gate = tmp_path / "gate"
    async with file_args.open() as store:
        holder = helpers.build_agent(setup, store)
        waiter = holder if where == "same-agent" else helpers.build_agent(setup, store)
        async with anyio.create_task_group() as tg:
            tg.start_soon(holder.call, block("held", gate), setup.ctx)
            assert setup.log is not None
            await wait_for_start(setup.log)
            with pytest.raises(SessionBusyError, match="is busy"):
                await waiter.call("me too", setup.ctx)
            gate.touch()
        state = await holder.get_agent_state(setup.ctx)
    assert state.context[-1].get_text_content() == "done: unblocked held"
    assert "me too" not in [m.get_text_content() for m in state.context]


@pytest.mark.parametrize("takeover", ["deleted", "overwritten"])
async def test_a_holder_whose_lease_was_taken_over_gets_version_conflict(
    takeover: str, shared_args: StoreArgs, make_setup: SetupFactory, tmp_path: Path
) -> None:
    setup = make_setup(shared_args)
    gate = tmp_path / "gate"
    intruder = json.dumps({"holder": "intruder"}).encode()
    async with shared_args.open() as store:
        agent = helpers.build_agent(setup, store)

        async def stale_holder() -> None:
            with pytest.raises(VersionConflict):
                await agent.call(block("stale", gate), setup.ctx)

        async with anyio.create_task_group() as tg:
            tg.start_soon(stale_holder)
            assert setup.log is not None
            await wait_for_start(setup.log)
            if takeover == "deleted":
                assert await store.delete(lease_key(setup))
            else:
                await store.put(lease_key(setup), intruder, ttl=60)
            gate.touch()

        lease = await store.get(lease_key(setup))
        assert (lease.value if lease else None) == (intruder if takeover == "overwritten" else None)
        state = await agent.get_agent_state(setup.ctx)
    texts = [m.get_text_content() for m in state.context]
    assert (
        "done: unblocked stale" not in texts
    )  # the fenced holder wrote nothing after the takeover
    assert [c.name for c in state.awaiting_tool_calls()] == ["block"]  # its last good checkpoint


# -- across processes ---------------------------------------------------------------------------


async def test_two_processes_on_one_session_serialize_and_lose_nothing(
    shared_args: StoreArgs, make_setup: SetupFactory
) -> None:
    setup = make_setup(shared_args)
    children = helpers.start_children(
        helpers.child_call, [(setup, slow("p0")), (setup, slow("p1"))]
    )
    results = [await anyio.to_thread.run_sync(c.result) for c in children]
    assert sorted(r["text"] for r in results) == ["done: slept p0", "done: slept p1"]
    assert setup.log is not None
    spans = intervals(setup.log)
    assert sorted(spans) == ["p0", "p1"]
    assert_disjoint(spans)
    state = await helpers.saved_state(setup)
    assert_both_turns_kept(state, ["p0", "p1"])


async def test_a_process_killed_mid_tool_leaves_a_resumable_session(
    shared_args: StoreArgs, make_setup: SetupFactory
) -> None:
    setup = make_setup(shared_args, lease_ttl=1.5)
    (child,) = helpers.start_children(helpers.child_call, [(setup, block("forever"))])
    try:
        await anyio.to_thread.run_sync(
            helpers.wait_until, lambda: helpers.state_has_pending_call(setup)
        )
    finally:
        child.kill()  # SIGKILL: no cleanup, the lease stays until it expires
    assert child.process.exitcode == -9

    state = await helpers.saved_state(setup)
    assert state is not None
    (orphan,) = state.awaiting_tool_calls()

    model = ScriptedModel(helpers.brain)
    async with setup.store.open() as store:
        agent = helpers.build_agent(setup, store, model)  # waits for the dead holder's lease
        final = await agent.call("are you there?", setup.ctx)
    assert final.get_text_content() == "echo: are you there?"
    seen = model.requests[0].messages
    assert orphans(seen) == ([], [])
    recovered = results_of(seen)[orphan.id]
    assert recovered.is_error and recovered.output == hitl_mod.RECOVERED


async def test_a_process_waiting_past_busy_timeout_gets_session_busy_error(
    shared_args: StoreArgs, make_setup: SetupFactory, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    setup = make_setup(shared_args)
    (child,) = helpers.start_children(helpers.child_call, [(setup, block("held", gate))])
    try:
        assert setup.log is not None
        await wait_for_start(setup.log)
        async with setup.store.open() as store:
            agent = helpers.build_agent(setup, store)
            agent.busy_timeout = 0.3
            with pytest.raises(SessionBusyError):
                await agent.call("me too", setup.ctx)
            gate.touch()
            held = await anyio.to_thread.run_sync(child.result)
            assert held["text"] == "done: unblocked held"
            agent.busy_timeout = 30
            assert (await agent.call("now me", setup.ctx)).get_text_content() == "echo: now me"
    finally:
        child.kill()
