"""Child processes of the race tests: several processes reach the same end at the same moment.

``BarrierStore`` holds each process's first write until every racer has made its reads, so the
processes really race (each reads the record before any of them writes it); the hook under test
logs one JSON line per invocation to a shared file.
"""

from __future__ import annotations

import multiprocessing.synchronize
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from agentscope_teams.hooks import Hooks, parse_hooks
from agentscope_teams.store import BaseStore

from ..backends import StoreSpec

#: Seconds a racer waits for the others at the barrier (a liveness guard, not a timing).
BARRIER_WAIT = 60.0


class BarrierStore:
    """``store``, with its first ``put`` held at ``barrier`` (later writes go straight through)."""

    def __init__(self, store: BaseStore, barrier: multiprocessing.synchronize.Barrier) -> None:
        self._store, self._barrier, self._waited = store, barrier, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def put(self, key: Any, value: bytes, **kw: Any) -> int:
        if not self._waited:
            self._waited = True
            await anyio.to_thread.run_sync(self._barrier.wait, BARRIER_WAIT)
        return await self._store.put(key, value, **kw)


def logging_hooks(log: Path, *events: str) -> Hooks:
    """Hooks appending each event they get to ``log`` as one JSON line, in one write (a real
    Python script, so lines of racing processes never interleave)."""
    script = log.parent / "log_event.py"
    if not script.exists():
        script.write_text(
            f"#!{sys.executable}\nimport os, sys\nline = sys.stdin.read().strip() + '\\n'\n"
            f"fd = os.open({str(log)!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)\n"
            "os.write(fd, line.encode())\n"
        )
        script.chmod(0o755)
    entry = [{"hooks": [{"type": "command", "command": str(script)}]}]
    return Hooks(parse_hooks({e: entry for e in events}), project_dir=log.parent)


def emit_stop(
    spec: StoreSpec, scope: tuple[str, str, str], run_id: str, log: str, barrier: Any
) -> None:
    """Recover an ended run's SubagentStop in this process (as a parent's sweep does)."""
    anyio.run(_emit_stop, spec, scope, run_id, Path(log), barrier)


async def _emit_stop(
    spec: StoreSpec, scope: tuple[str, str, str], run_id: str, log: Path, barrier: Any
) -> None:
    from agentscope_teams.subagents.runs import RunBook
    from agentscope_teams.subagents.stops import subagent_stop

    async with spec.open() as store:
        book = RunBook(BarrierStore(store, barrier), *scope)  # type: ignore[arg-type]
        rec = await book.get(run_id)
        assert rec is not None
        await subagent_stop(logging_hooks(log, "SubagentStop"), book, rec, str(log.parent))


def settle_lapsed(
    spec: StoreSpec, org: str, team_id: str, member: str, how: str, log: str, barrier: Any
) -> None:
    """Meet a task whose owner died with every attempt used, as a member's claim (``how`` =
    "claim") or a sweep ("reap") does, all racers at once; the client has TaskCompleted hooks."""
    anyio.run(_settle_lapsed, spec, org, team_id, member, how, Path(log), barrier)


async def _settle_lapsed(
    spec: StoreSpec, org: str, team_id: str, member: str, how: str, log: Path, barrier: Any
) -> None:
    from agentscope_teams.context import RuntimeContext
    from agentscope_teams.teams.client import LocalTeamClient

    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id=org)
    async with spec.open() as store:
        client = LocalTeamClient(store, ctx, hooks=logging_hooks(log, "TaskCompleted"))
        await client.get_team(team_id)  # connected and warm before the race
        await anyio.to_thread.run_sync(barrier.wait, BARRIER_WAIT)
        if how == "claim":
            await client.claim_task(team_id, member)
        else:
            await client.reap_expired(team_id)
