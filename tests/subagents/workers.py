"""Child-process side of the crash tests: spawn a background run, then die with SIGKILL."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel

from ..backends import StoreSpec
from .helpers import eventually, make_parent, runs, settled, spawn


def spawn_then_die(spec: StoreSpec, root: str, org: str, child_delay: float, finish: bool) -> None:
    """Spawn one background run; SIGKILL this process once it finished (``finish``) or started."""
    anyio.run(_spawn_then_die, spec, Path(root), org, child_delay, finish)


async def _spawn_then_die(
    spec: StoreSpec, root: Path, org: str, child_delay: float, finish: bool
) -> None:
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)
    child = ScriptedModel(["the background result"], delay=child_delay)
    script = [spawn("rev", "work", timeout_seconds=0), "started"]
    async with spec.open() as store:
        lead = make_parent(root, store, script, {"rev": child}, lease_ttl=1.0)
        await lead.call("go", ctx)
        if finish:
            await settled(store, ctx)
        else:
            await eventually(lambda: _started(child))
            await eventually(lambda: _running(store, ctx))
        os.kill(os.getpid(), signal.SIGKILL)


async def _started(child: ScriptedModel) -> bool:
    return len(child.requests) > 0


async def _running(store: object, ctx: RuntimeContext) -> bool:
    return [r.status for r in await runs(store, ctx)] == ["running"]  # type: ignore[arg-type]
