"""Process A of the cross-process cancel test: run a looping background child until its run
ends, then report how many model calls the child made, and again a moment later."""

from __future__ import annotations

import json
from pathlib import Path

import anyio

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel

from ..backends import StoreSpec
from .helpers import call, eventually, make_parent, runs, spawn
from .helpers import spec as subagent_spec


def loop_until_cancelled(spec: StoreSpec, root: str, org: str, report: str) -> None:
    anyio.run(_loop, spec, Path(root), org, Path(report))


async def _loop(spec: StoreSpec, root: Path, org: str, report: Path) -> None:
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)
    child = ScriptedModel(lambda req: call("list_files"), delay=0.05)
    script = [spawn("rev", "loop forever", timeout_seconds=0), "started"]
    async with spec.open() as store:
        looping = [subagent_spec("rev", steps=1000)]  # it never ends by itself within the test
        lead = make_parent(root, store, script, {"rev": child}, specs=looping, lease_ttl=0.6)
        async with lead:
            await lead.call("go", ctx)

            async def ended() -> bool:
                return all(not r.status.active for r in await runs(store, ctx))

            await eventually(ended, within=30)
            at_end = len(child.requests)
            await anyio.sleep(0.5)
            counts = json.dumps({"at_end": at_end, "later": len(child.requests)})
            await anyio.Path(report).write_text(counts)
