"""The ``--workers N`` processes of ``agentscope-teams review``: started on the review's store
(``agentscope-teams worker`` with the review's specs, model and rate limit; the budget reaches
them with the team's directory record), stopped with it, and their members' usage added to the
review's meter from their sessions."""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
from anyio.abc import Process

from ..context import RuntimeContext
from ..errors import ConfigurationError
from ..sessions import SessionStorage
from ..store.base import BaseStore
from ..store.capabilities import capabilities_of
from ..teams import LocalTeamClient
from ..tracing.usage import METER
from .common import STORE_ENV

if TYPE_CHECKING:
    from .review_run import ReviewConfig


async def check_shared(store: BaseStore, workers: int) -> None:
    """Refuse ``--workers`` on a store the worker processes could not reach."""
    if workers > 0 and not capabilities_of(store).shared_across_processes:
        raise ConfigurationError(
            f"--workers {workers} runs members in other processes, but {type(store).__name__} "
            "is not shared across processes; use a file, sqlite, SQL or Redis store "
            "(e.g. --store file:///tmp/review-store)"
        )


async def start_workers(cfg: ReviewConfig, stack: AsyncExitStack, poll: float) -> Path:
    """``--workers N`` worker processes on the same store; their output goes to a log file.

    They get the lead's model string: a registered name (``offline``) resolves there as here."""
    model = cfg.model_arg
    # The store URL goes through the environment, not argv: a password in it would show in `ps`.
    env = {**os.environ, STORE_ENV: cfg.store_url}
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker"]
    cmd += ["--specs", str(cfg.specs), "--model", model, "--poll", str(poll)]
    cmd += ["--exit-with-parent"]  # a killed review leaves no worker behind
    cmd += ["--sandbox", "none"]  # as the review's own members: no shell tools
    cmd += cfg.usage.worker_args()  # the rate limit; the budget comes with the team's record
    log = Path(tempfile.gettempdir()) / f"agentscope-review-workers-{os.getpid()}.log"
    out = stack.enter_context(log.open("ab"))
    for _ in range(cfg.workers):
        proc = await anyio.open_process(cmd, stdout=out, stderr=out, env=env)
        stack.push_async_callback(_stop, proc)
    return log


async def meter_worker_members(store: BaseStore, ctx: RuntimeContext, team_id: str) -> None:
    """Add to the running usage meter the members that ran in worker processes: they metered
    their usage there, and their sessions keep its totals (on a resumed review, both runs')."""
    meter = METER.get()
    if meter is None:
        return
    team = await LocalTeamClient(store, ctx).get_team(team_id)
    storage = SessionStorage(store)
    for member in team.members:
        if member.name in meter.agents:  # it ran in this process: metered already
            continue
        record = await storage.get_session(
            ctx.user_id, member.name, member.session_id, org_id=ctx.org_id
        )
        used = record.state.usage if record is not None else None
        if used is not None and used.requests:
            meter.add(member.name, used.input_tokens, used.output_tokens, used.requests)


async def _stop(proc: Process) -> None:
    with anyio.CancelScope(shield=True):
        if proc.returncode is None:
            proc.terminate()
            with anyio.move_on_after(5):
                await proc.wait()
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        await proc.aclose()
