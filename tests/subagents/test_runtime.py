"""Spawning, waiting, promotion to background, parallel runs, messages and cancellation."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from agentscope_teams.message import ToolUseBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents import RunStatus, child_session_id
from agentscope_teams.subagents.inbox import INBOX_META
from agentscope_teams.tools import tool

from .helpers import (
    ALICE,
    all_text,
    call,
    eventually,
    extension,
    is_dir,
    last_output,
    make_parent,
    run_id_in,
    runs,
    settled,
    spawn,
    spec,
    tool_results,
    with_run,
)


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


async def test_sync_spawn_returns_the_childs_answer(tmp_path: Path, store: InMemoryStore) -> None:
    child = ScriptedModel(["LGTM, two nits"])
    lead = make_parent(tmp_path, store, [spawn("rev", "review a.py"), "done"], {"rev": child})

    assert (await lead.call("review", ALICE)).get_text_content() == "done"

    output = last_output(lead.loop.model.requests[1])  # type: ignore[attr-defined]
    assert "completed" in output and "LGTM, two nits" in output
    assert child.requests[0].messages[-1].get_text_content() == "review a.py"
    [rec] = await runs(store)
    assert (rec.status, rec.result, rec.spec, rec.depth) == (
        RunStatus.COMPLETED,
        "LGTM, two nits",
        "rev",
        1,
    )
    assert rec.started_at and rec.ended_at and rec.started_at <= rec.ended_at
    assert rec.child_session == child_session_id(ALICE, "lead", "rev", "r:" + rec.run_id)
    saved = await lead.sessions.get_session("alice", "rev", rec.child_session, org_id="acme")
    assert saved is not None and saved.state.context[-1].get_text_content() == "LGTM, two nits"


async def test_slow_sync_run_is_promoted_and_delivered_before_the_next_step(
    tmp_path: Path, store: InMemoryStore
) -> None:
    @tool
    async def pause(seconds: float) -> str:
        """Wait a moment."""
        await anyio.sleep(seconds)
        return "paused"

    child = ScriptedModel(["slow answer"], delay=0.4)
    script = [
        spawn("rev", "take your time", timeout_seconds=0.05),
        call("pause", seconds=0.8),
        "ok",
    ]
    lead = make_parent(tmp_path, store, script, {"rev": child}, tools=[pause])

    await lead.call("go", ALICE)

    requests = lead.loop.model.requests  # type: ignore[attr-defined]
    promoted = last_output(requests[1])
    assert "still running" in promoted and run_id_in(promoted)
    assert "slow answer" not in all_text(requests[1])
    notices = [m for m in requests[2].messages if INBOX_META in m.metadata]
    assert len(notices) == 1 and "slow answer" in notices[0].get_text_content()
    [rec] = await runs(store)
    assert rec.background and rec.notified and rec.status is RunStatus.COMPLETED


async def test_background_result_is_injected_at_the_next_call_exactly_once(
    tmp_path: Path, store: InMemoryStore
) -> None:
    child = ScriptedModel(["background answer"], delay=0.2)
    lead_model = ScriptedModel([spawn("rev", "later", timeout_seconds=0), "started", "a", "b"])
    lead = make_parent(tmp_path, store, lead_model, {"rev": child})

    await lead.call("go", ALICE)
    assert "background" in last_output(lead_model.requests[1])
    await settled(store)
    await lead.call("anything new?", ALICE)
    await lead.call("and now?", ALICE)

    assert "background answer" in all_text(lead_model.requests[2])
    state = await lead.get_agent_state(ALICE)
    assert sum("background answer" in m.get_text_content() for m in state.context) == 1
    assert state.middle_context["subagents"]["watch"] == []


async def test_parallel_spawns_overlap_and_map_back_to_their_calls(
    tmp_path: Path, store: InMemoryStore
) -> None:
    async def answer(req: ModelRequest) -> ModelResponse:
        await anyio.sleep(0.3)
        return ScriptedModel.text("answer to " + req.messages[-1].get_text_content())

    calls = [
        ToolUseBlock(id=f"call-{i}", name="agent_spawn", input={"agent": "rev", "task": f"t{i}"})
        for i in range(4)
    ]
    lead = make_parent(
        tmp_path, store, [ScriptedModel.tool_calls(calls), "done"], {"rev": ScriptedModel(answer)}
    )

    with anyio.fail_after(1.0):  # four 0.3 s children in sequence would take 1.2 s
        await lead.call("fan out", ALICE)

    results = tool_results(lead.loop.model.requests[1])  # type: ignore[attr-defined]
    assert {
        r.tool_use_id: r.output.endswith(f"answer to t{r.tool_use_id[-1]}") for r in results
    } == {f"call-{i}": True for i in range(4)}
    records = await runs(store)
    assert len(records) == 4 and all(r.status is RunStatus.COMPLETED for r in records)
    starts = [r.started_at for r in records if r.started_at]
    ends = [r.ended_at for r in records if r.ended_at]
    assert len(starts) == len(ends) == 4 and max(starts) < min(ends)


async def test_cancel_stops_the_child_and_removes_its_workspace(
    tmp_path: Path, store: InMemoryStore
) -> None:
    child = ScriptedModel(lambda req: call("list_files"), delay=0.05)  # never finishes by itself
    script = [
        spawn("rev", "loop", timeout_seconds=0),
        "started",
        with_run(lambda r: call("agent_cancel", run=r)),
        "stopped",
    ]
    lead = make_parent(tmp_path, store, script, {"rev": child})

    await lead.call("go", ALICE)
    [rec] = await runs(store)
    assert is_dir(rec.workspace)
    await eventually(lambda: _after(child, 3))
    await lead.call("stop it", ALICE)
    calls_at_cancel = len(child.requests)
    await anyio.sleep(0.3)

    assert len(child.requests) == calls_at_cancel
    assert "cancelled" in last_output(lead.loop.model.requests[3])  # type: ignore[attr-defined]
    [rec] = await runs(store)
    assert rec.status is RunStatus.CANCELLED and rec.workspace and not is_dir(rec.workspace)


async def _after(model: ScriptedModel, count: int) -> bool:
    return len(model.requests) >= count


async def test_cancel_from_another_process_is_noticed_by_the_heartbeat(
    tmp_path: Path, store: InMemoryStore
) -> None:
    child = ScriptedModel(lambda req: call("list_files"), delay=0.05)
    owner = make_parent(
        tmp_path,
        store,
        [spawn("rev", "loop", timeout_seconds=0), "started"],
        {"rev": child},
        lease_ttl=0.3,
    )
    cancel = with_run(lambda r: call("agent_cancel", run=r))
    other = make_parent(
        tmp_path, store, [call("agent_list"), cancel, "asked"], {}, specs=[spec("rev")]
    )
    await owner.call("go", ALICE)

    await other.call("stop it", ALICE)

    assert "requested" in last_output(other.loop.model.requests[2])  # type: ignore[attr-defined]
    await eventually(lambda: _status(store, RunStatus.CANCELLED), within=3)
    stopped_at = len(child.requests)
    await anyio.sleep(0.3)
    assert len(child.requests) == stopped_at


async def _status(store: InMemoryStore, status: RunStatus) -> bool:
    return [r.status for r in await runs(store)] == [status]


async def test_send_queues_for_a_running_child_and_continues_a_finished_one(
    tmp_path: Path, store: InMemoryStore
) -> None:
    seen: list[str] = []

    async def child_step(req: ModelRequest) -> ModelResponse:
        seen.append(all_text(req))
        if "Message from lead" in req.messages[-1].get_text_content() or len(seen) > 1:
            return ScriptedModel.text(f"reply {len(seen)}")
        await anyio.sleep(0.3)
        return call("list_files")

    script = [
        spawn("rev", "start", timeout_seconds=0),
        with_run(lambda r: call("agent_send", run=r, message="focus on auth")),
        "queued",
        with_run(lambda r: call("agent_wait", run=r, timeout_seconds=5)),
        with_run(lambda r: call("agent_send", run=r, message="one more thing")),
        "done",
    ]
    lead = make_parent(tmp_path, store, script, {"rev": ScriptedModel(child_step)})

    await lead.call("go", ALICE)
    assert "Queued" in last_output(lead.loop.model.requests[2])  # type: ignore[attr-defined]
    await lead.call("wait and follow up", ALICE)

    assert "focus on auth" in seen[1]
    followup = last_output(lead.loop.model.requests[5])  # type: ignore[attr-defined]
    assert "completed" in followup and "one more thing" in seen[-1] and "focus on auth" in seen[-1]
    first, second = await runs(store)
    assert second.continues == first.run_id and second.child_session == first.child_session


async def test_fork_starts_from_the_parents_context_and_fresh_does_not(
    tmp_path: Path, store: InMemoryStore
) -> None:
    forked, fresh = ScriptedModel(["f"]), ScriptedModel(["n"])
    specs = [spec("forked", context="fork"), spec("fresh")]
    script = ["hello", spawn("forked", "go on"), spawn("fresh", "go on"), "done"]
    lead = make_parent(tmp_path, store, script, {"forked": forked, "fresh": fresh}, specs=specs)

    await lead.call("the secret word is kiwi", ALICE)
    await lead.call("delegate", ALICE)

    assert "kiwi" in all_text(forked.requests[0]) and "kiwi" not in all_text(fresh.requests[0])
    assert not any(m.tool_uses() for m in forked.requests[0].messages)


async def test_spec_tools_and_steps_shape_the_child(tmp_path: Path, store: InMemoryStore) -> None:
    child = ScriptedModel(lambda req: call("list_files"))
    specs = [spec("rev", tools=["Read"], steps=2)]
    lead = make_parent(
        tmp_path, store, [spawn("rev", "x"), "done"], {"rev": child}, specs=specs, max_depth=1
    )

    await lead.call("go", ALICE)

    assert [t.name for t in child.requests[0].tools] == ["read_file"]
    assert len(child.requests) == 3  # two steps, then the final answer without tools
    assert child.requests[-1].tools == []
    assert extension(lead).specs["rev"].steps == 2


async def test_a_cancelled_parent_call_moves_its_sync_run_to_the_background(
    tmp_path: Path, store: InMemoryStore
) -> None:
    child = ScriptedModel(["late answer"], delay=0.4)
    lead_model = ScriptedModel([spawn("rev", "slow", timeout_seconds=30), "next call"])
    lead = make_parent(tmp_path, store, lead_model, {"rev": child})

    with anyio.move_on_after(0.1):
        await lead.call("go", ALICE)
    await settled(store)
    await lead.call("so?", ALICE)

    [rec] = await runs(store)
    assert rec.status is RunStatus.COMPLETED and rec.background
    assert "late answer" in all_text(lead_model.requests[1])


async def test_runs_of_a_child_end_with_it(tmp_path: Path, store: InMemoryStore) -> None:
    leaf = ScriptedModel(lambda req: call("list_files"), delay=0.05)
    mid = ScriptedModel([spawn("leaf", "forever", timeout_seconds=0), "mid done"])
    lead = make_parent(tmp_path, store, [spawn("mid", "go"), "done"], {"mid": mid, "leaf": leaf})

    await lead.call("go", ALICE)

    [mid_run] = await runs(store)
    [leaf_run] = await runs(store, ALICE.with_session(mid_run.child_session))
    assert mid_run.status is RunStatus.COMPLETED and leaf_run.status is RunStatus.CANCELLED
    stopped_at = len(leaf.requests)
    await anyio.sleep(0.2)
    assert len(leaf.requests) == stopped_at
