"""Real processes: a background result survives the death of the process that ran it, and a run
orphaned by a killed process is reported lost. Process A spawns and is SIGKILLed; the test process
(B) then calls the same parent session through the shared store."""

from __future__ import annotations

import multiprocessing as mp
import signal
from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import Msg
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.subagents import RunBook, RunStatus, janitor
from agentscope_teams.subagents.inbox import INBOX_META

from ..backends import StoreSpec, make_spec, unique_namespace
from ..conftest import require_service
from . import workers
from .helpers import is_dir, make_parent, runs

pytestmark = pytest.mark.slow


@pytest.fixture(params=["file", "redis"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    require_service(request.param)
    return make_spec(request.param, tmp_path)


def run_and_kill(spec: StoreSpec, root: Path, org: str, child_delay: float, finish: bool) -> None:
    proc = mp.get_context("spawn").Process(
        target=workers.spawn_then_die, args=(spec, str(root), org, child_delay, finish)
    )
    proc.start()
    proc.join(timeout=60)
    assert proc.exitcode == -signal.SIGKILL, f"process A ended with {proc.exitcode}"


def notices(messages: Sequence[Msg]) -> list[str]:
    return [m.get_text_content() for m in messages if INBOX_META in m.metadata]


async def test_result_of_a_killed_process_is_delivered_exactly_once(
    shared: StoreSpec, tmp_path: Path
) -> None:
    org = unique_namespace()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)
    await anyio.to_thread.run_sync(run_and_kill, shared, tmp_path, org, 0.3, True)

    async with shared.open() as store:
        lead_model = ScriptedModel(["got it", "nothing new"])
        lead = make_parent(tmp_path, store, lead_model, {"rev": ScriptedModel([])})
        await lead.call("any results?", ctx)
        await lead.call("anything else?", ctx)

        assert len(notices(lead_model.requests[0].messages)) == 1
        assert "the background result" in notices(lead_model.requests[0].messages)[0]
        assert len(notices(lead_model.requests[1].messages)) == 1  # history, not a new injection
        state = await lead.get_agent_state(ctx)
        assert len(notices(state.context)) == 1
        inbox = RunBook.for_ctx(store, ctx).inbox("lead")
        assert await inbox.cursor() == (await store.read(inbox.stream))[-1][0]


async def test_run_of_a_killed_process_is_lost_and_reported(
    shared: StoreSpec, tmp_path: Path
) -> None:
    org = unique_namespace()
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)
    await anyio.to_thread.run_sync(run_and_kill, shared, tmp_path, org, 30.0, False)
    await anyio.sleep(1.2)  # lease_ttl of process A

    async with shared.open() as store:
        [before] = await runs(store, ctx)
        assert is_dir(before.workspace)
        lead_model = ScriptedModel(["I will retry"])
        lead = make_parent(tmp_path, store, lead_model, {"rev": ScriptedModel([])})
        await lead.call("status?", ctx)

        [lost] = notices(lead_model.requests[0].messages)
        assert f"{before.run_id} (rev) was lost" in lost
        [after] = await runs(store, ctx)
        assert after.status is RunStatus.LOST
        assert await janitor(store, tmp_path / "ws") == [Path(before.workspace or "")]
