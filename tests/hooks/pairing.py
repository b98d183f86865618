"""A project whose settings.json logs SubagentStart / SubagentStop (as JSON lines) to a file, and
the parent agent of the pairing tests (also used in a child process that is SIGKILLed)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio

from agentscope_teams.compose import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store import BaseStore

from ..backends import StoreSpec
from ..subagents.helpers import eventually, runs, spawn

LOG = "events.jsonl"


def project(root: Path) -> Path:
    """``root`` with ``.claude/agents/rev.md`` and a settings.json logging both events; returns
    the agents folder."""
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    (agents / "rev.md").write_text(
        "---\nname: rev\ndescription: Reviews.\nmodel: rev\n---\nYou review.\n"
    )
    log = root / LOG
    entry = [{"hooks": [{"type": "command", "command": f"cat >> {log}; echo >> {log}"}]}]
    settings = {"hooks": {"SubagentStart": entry, "SubagentStop": entry}}
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    return agents


def events(root: Path) -> list[dict[str, Any]]:
    path = root / LOG
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def parent(
    root: Path, store: BaseStore, script: Any, child: ScriptedModel, **kw: Any
) -> HarnessAgent:
    model = script if isinstance(script, ScriptedModel) else ScriptedModel(script, name="lead")
    return HarnessAgent(
        "lead",
        model,
        workspace=root / "ws",
        store=store,
        specs=project(root),
        models={"rev": child},
        trust_project=True,
        teams=False,
        **kw,
    )


def spawn_then_die(spec: StoreSpec, root: str, org: str) -> None:
    """Spawn one background run, SIGKILL this process once the run is running."""
    anyio.run(_spawn_then_die, spec, Path(root), org)


async def _spawn_then_die(spec: StoreSpec, root: Path, org: str) -> None:
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)
    child = ScriptedModel(["never"], delay=30.0)
    async with spec.open() as store:
        lead = parent(root, store, [spawn("rev", "work", timeout_seconds=0), "started"], child,
                      lease_ttl=1.0)  # fmt: skip
        await lead.call("go", ctx)

        async def running() -> bool:
            return [r.status for r in await runs(store, ctx)] == ["running"]

        await eventually(running)
        os.kill(os.getpid(), signal.SIGKILL)
