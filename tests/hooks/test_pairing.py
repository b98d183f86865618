"""Every SubagentStart has exactly one SubagentStop with the same agent_id (the run id): for
completed, failed and cancelled background runs, and for a run whose process was SIGKILLed."""

from __future__ import annotations

import multiprocessing as mp
import signal
from collections import Counter
from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents import RunBook, RunStatus

from ..backends import StoreSpec, make_spec, unique_namespace
from ..conftest import require_service
from ..subagents.helpers import ALICE, eventually, runs, settled, spawn
from . import pairing
from .helpers import read_lines
from .pairing import events, parent


def pairs(root: Path) -> dict[str, Counter[str]]:
    """agent_id -> how many of each event it got."""
    found: dict[str, Counter[str]] = {}
    for e in events(root):
        found.setdefault(e["agent_id"], Counter())[e["hook_event_name"]] += 1
    return found


@pytest.mark.parametrize("end", ["completed", "failed", "cancelled"])
async def test_background_runs_pair_start_and_stop(tmp_path: Path, end: str) -> None:
    child = {
        "completed": ScriptedModel(["the review"]),
        "failed": ScriptedModel([RuntimeError("model down")]),
        "cancelled": ScriptedModel(["never"], delay=30.0),
    }[end]
    store = InMemoryStore()
    lead = parent(tmp_path, store, [spawn("rev", "work", timeout_seconds=0), "started"], child,
                  lease_ttl=0.3)  # fmt: skip
    async with lead:
        await lead.call("go", ALICE)
        [rec] = await runs(store, ALICE)
        if end == "cancelled":  # as agent_cancel from any process: the heartbeat stops it
            await RunBook.for_ctx(store, ALICE).update(
                rec.run_id, lambda r: r.model_copy(update={"cancel_requested": True})
            )
        [done] = await settled(store, ALICE)
    assert done.status == RunStatus(end)
    assert pairs(tmp_path) == {rec.run_id: Counter({"SubagentStart": 1, "SubagentStop": 1})}
    stop = next(e for e in events(tmp_path) if e["hook_event_name"] == "SubagentStop")
    assert stop["agent_type"] == "rev" and stop["status"] == end


async def test_a_run_stopped_by_shutdown_pairs(tmp_path: Path) -> None:
    store = InMemoryStore()
    lead = parent(tmp_path, store, [spawn("rev", "work", timeout_seconds=0), "started"],
                  ScriptedModel(["never"], delay=30.0))  # fmt: skip
    async with lead:
        await lead.call("go", ALICE)
    [rec] = await runs(store, ALICE)
    assert rec.status is RunStatus.LOST
    assert pairs(tmp_path) == {rec.run_id: Counter({"SubagentStart": 1, "SubagentStop": 1})}


async def test_subagent_stop_exit_2_makes_the_subagent_continue_once(tmp_path: Path) -> None:
    gate = tmp_path / "gate.py"
    gate.write_text(
        "import json, sys\nd = json.load(sys.stdin)\n"
        "if not d['stop_hook_active']:\n"
        "    print('add a summary line', file=sys.stderr); sys.exit(2)\n"
    )
    gate.chmod(0o755)
    child = ScriptedModel(["draft", "draft plus summary"])
    hooks = {"SubagentStop": [{"hooks": [{"type": "command", "command": f"python3 {gate}"}]}]}
    store = InMemoryStore()
    lead = parent(tmp_path, store, [spawn("rev", "work"), "done"], child, hooks=hooks)
    async with lead:
        await lead.call("go", ALICE)
    [rec] = await runs(store, ALICE)
    assert rec.result == "draft plus summary"
    assert child.requests[1].messages[-1].get_text_content() == "add a summary line"
    assert pairs(tmp_path)[rec.run_id] == Counter({"SubagentStart": 1, "SubagentStop": 2})


@pytest.fixture(params=["file", "redis"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    require_service(request.param)
    return make_spec(request.param, tmp_path)


def _run_and_kill(spec: StoreSpec, root: Path, org: str) -> None:
    proc = mp.get_context("spawn").Process(
        target=pairing.spawn_then_die, args=(spec, str(root), org)
    )
    proc.start()
    proc.join(timeout=60)
    assert proc.exitcode == -signal.SIGKILL, f"process A ended with {proc.exitcode}"


@pytest.mark.slow
async def test_a_sigkilled_run_gets_one_stop_from_the_next_process(
    shared: StoreSpec, tmp_path: Path
) -> None:
    org = unique_namespace()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)
    await anyio.to_thread.run_sync(_run_and_kill, shared, tmp_path, org)
    [started] = [e for e in events(tmp_path)]
    assert started["hook_event_name"] == "SubagentStart"  # process A died before any stop

    async with shared.open() as store:
        await eventually(lambda: _lease_gone(store, ctx, started["agent_id"]))
        # two parents (two processes' worth of readers) recover it; one emits the stop
        first = parent(tmp_path, store, ["I will retry"], ScriptedModel([]))
        second = parent(tmp_path, store, ["ok"], ScriptedModel([]))
        async with anyio.create_task_group() as tg:
            tg.start_soon(first.call, "status?", ctx)
            tg.start_soon(second.call, "status?", ctx.with_session("s1"))
        [rec] = await runs(store, ctx)
        await first.aclose()
        await second.aclose()
    assert rec.status is RunStatus.LOST and rec.stop_emitted
    assert pairs(tmp_path) == {rec.run_id: Counter({"SubagentStart": 1, "SubagentStop": 1})}


async def _lease_gone(store: object, ctx: RuntimeContext, run_id: str) -> bool:
    book = RunBook.for_ctx(store, ctx)  # type: ignore[arg-type]
    return await store.get(book.keys.lease(run_id)) is None  # type: ignore[attr-defined]


async def test_a_subagent_s_tool_events_name_the_run(tmp_path: Path) -> None:
    log = tmp_path / "tools.jsonl"
    hooks = {"PreToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": f"cat >> {log}; echo >> {log}"}]}]}  # fmt: skip
    child = ScriptedModel(
        [ScriptedModel.tool_call("write_file", {"path": "r.txt", "content": "x"}), "written"]
    )
    store = InMemoryStore()
    lead = parent(tmp_path, store, [spawn("rev", "work"), "done"], child, hooks=hooks)
    async with lead:
        await lead.call("go", ALICE)
    [rec] = await runs(store, ALICE)
    [event] = read_lines(log)
    assert (event["agent_id"], event["agent_type"]) == (rec.run_id, "rev")
