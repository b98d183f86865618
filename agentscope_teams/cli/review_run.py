"""One ``agentscope-teams review`` run: the lead, its team, the watcher and the report.

The lead is a :class:`HarnessAgent` with the team tools (``TeamLeadExtension``); its members run in this
process (default) or in ``--workers N`` worker processes that take them from the shared store. While
the lead runs, a watcher polls the same store through :class:`LocalTeamClient` for the task board and
the team's messages and hands them to the view. A new review records how it started in its lead
session (:mod:`.review_resume`); a resumed one (``cfg.resume``) calls the lead on that session again.

The report (``--output``) is rendered from the findings data on the board (:func:`board_report`),
not taken from the lead's text: every finding in it is one a member completed its task with.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import AsyncExitStack, aclosing
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import anyio
from anyio.abc import Process

from ..agent import ReActConfig
from ..agent.config import CompressionConfig
from ..compose import HarnessAgent
from ..context import RuntimeContext
from ..errors import ConfigurationError
from ..events import ReplyEndEvent, ToolResultEvent
from ..message import new_id
from ..model import ChatModel
from ..review.engines import require_engines
from ..review.report import Changes, board_findings, review_report
from ..sessions import SessionStorage
from ..store.base import BaseStore
from ..store.capabilities import capabilities_of
from ..teams import LocalTeamClient, Task, TaskStatus, TeamLeadExtension, TeamMessage, TeamStatus
from ..teams.results import TeamCreated
from ..tools import filesystem_tools, output_of
from ..tracing.usage import METER
from .common import STORE_ENV, CommandError, open_store
from .review_changes import LEAD_GIT_TOOLS, ChangedSince
from .review_resume import LEAD, RESUME_INSTRUCTION, Interrupted, ReviewRecord, record_review
from .review_stats import summarize
from .review_view import ReviewSummary, ReviewView

POLL_SECONDS = 0.25
LEAD_STEPS = 60
#: Session and member leases: a resumed review waits at most this long for the leases of the
#: process that was killed (members inherit the lead's).
LEASE_TTL = 10.0


@dataclass
class ReviewConfig:
    """Everything one run needs, decided by the command line."""

    path: Path
    target: str
    model: ChatModel
    model_arg: str
    offline: bool
    store_url: str
    specs: Path
    workers: int
    output: Path
    timeout: float
    prompt: str
    changes: ChangedSince | None = None
    resume: Interrupted | None = None

    def record(self) -> ReviewRecord:
        return ReviewRecord(
            path=str(self.path),
            target=self.target,
            output=str(self.output.resolve()),
            model=self.model_arg,
            specs=str(self.specs),
            changed_since=self.changes.ref if self.changes else None,
        )

    def instruction(self) -> str:
        if self.resume is not None:
            return RESUME_INSTRUCTION
        changes = self.changes.instruction_lines() if self.changes else ""
        return (
            f"Review the Python code of this directory with your team.\nTarget: {self.target}\n"
            f"{changes}Answer with the review report in Markdown, as your instructions describe."
        )


class BoardView(Protocol):
    """What the :class:`Watcher` reports to (a review's view, or ``run``'s)."""

    def board(self, tasks: Sequence[Task]) -> None: ...
    def message(self, msg: TeamMessage) -> None: ...


class Watcher:
    """Polls the team's board and mailboxes and reports what changed to the view."""

    def __init__(self, client: LocalTeamClient, view: BoardView) -> None:
        self.client, self.view = client, view
        self.team_id: str | None = None
        self.tasks: list[Task] = []
        self._seen: dict[str, int] = {}
        self._shown: list[tuple[str, str, str | None]] = []
        self._broadcasts: set[tuple[str, str, str]] = set()

    def note(self, event: ToolResultEvent) -> None:
        """Learn the team id from the lead's ``createTeam`` result."""
        created = (
            output_of(event.result, TeamCreated) if event.result.name == "createTeam" else None
        )
        if created is not None and self.team_id is None:
            self.team_id = created.team_id

    async def poll(self) -> None:
        if self.team_id is None:
            return
        tasks = await self.client.list_tasks(self.team_id)
        shown = [(t.id, t.status.value, t.owner) for t in tasks]
        if shown != self._shown:
            self._shown, self.tasks = shown, tasks
            self.view.board(tasks)
        team = await self.client.get_team(self.team_id)
        for name in team.participants():
            after = self._seen.get(name, 0)
            for msg in await self.client.read_messages(self.team_id, name, after=after):
                self._seen[name] = msg.seq
                key = (msg.sender, msg.content, msg.sent_at.isoformat())
                if msg.broadcast and key in self._broadcasts:
                    continue  # one copy per recipient: show it once
                self._broadcasts.add(key)
                self.view.message(msg)

    async def run(self) -> None:
        while True:
            await self.poll()
            await anyio.sleep(POLL_SECONDS)


async def _check_shared(store: BaseStore, workers: int) -> None:
    if workers > 0 and not capabilities_of(store).shared_across_processes:
        raise ConfigurationError(
            f"--workers {workers} runs members in other processes, but {type(store).__name__} "
            "is not shared across processes; use a file, sqlite, SQL or Redis store "
            "(e.g. --store file:///tmp/review-store)"
        )


async def _start_workers(cfg: ReviewConfig, stack: AsyncExitStack) -> Path:
    """``--workers N`` worker processes on the same store; their output goes to a log file.

    They get the lead's model string: a registered name (``offline``) resolves there as here."""
    model = cfg.model_arg
    # The store URL goes through the environment, not argv: a password in it would show in `ps`.
    env = {**os.environ, STORE_ENV: cfg.store_url}
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker"]
    cmd += ["--specs", str(cfg.specs), "--model", model, "--poll", str(POLL_SECONDS)]
    cmd += ["--exit-with-parent"]  # a killed review leaves no worker behind
    cmd += ["--sandbox", "none"]  # as the review's own members: no shell tools
    log = Path(tempfile.gettempdir()) / f"agentscope-review-workers-{os.getpid()}.log"
    out = stack.enter_context(log.open("ab"))
    for _ in range(cfg.workers):
        proc = await anyio.open_process(cmd, stdout=out, stderr=out, env=env)
        stack.push_async_callback(_stop, proc)
    return log


async def _meter_worker_members(store: BaseStore, ctx: RuntimeContext, team_id: str) -> None:
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


def _config(cfg: ReviewConfig) -> ReActConfig:
    """The lead's loop settings (members inherit them, with their spec's steps).

    The offline model has no context window, and it finds its place in a task from the messages
    of the current turn: context compression would only take those away, so it is off.
    """
    if cfg.offline:
        return ReActConfig(max_iters=LEAD_STEPS, compression=CompressionConfig(enabled=False))
    return ReActConfig(max_iters=LEAD_STEPS)


def _lead(cfg: ReviewConfig, store: BaseStore, extension: TeamLeadExtension) -> HarnessAgent:
    return HarnessAgent(
        LEAD,
        cfg.model,
        cfg.prompt,
        workspace=cfg.path,
        workspace_scope="shared",
        store=store,
        tools=[t for t in filesystem_tools() if t.read_only],  # the review never edits code
        builtin_tools=False,
        extensions=[extension],
        config=_config(cfg),
        mcp_servers=cfg.changes.mcp_servers() if cfg.changes else None,
        mcp_tools=LEAD_GIT_TOOLS,
        lease_ttl=LEASE_TTL,
    )


async def _drive(
    lead: HarnessAgent, prompt: str, ctx: RuntimeContext, view: ReviewView, watcher: Watcher
) -> str:
    """Stream the lead's reply to the view while the watcher polls the team; the final text."""
    report = ""
    # aclosing: if the view fails (a closed stdout), the reply stops and saves here, in this task
    async with anyio.create_task_group() as tg, aclosing(lead.stream(prompt, ctx)) as events:
        tg.start_soon(watcher.run)
        async for event in events:
            view.agent_event(event)
            if isinstance(event, ToolResultEvent):
                watcher.note(event)
            elif isinstance(event, ReplyEndEvent):
                report = event.msg.get_text_content()
        tg.cancel_scope.cancel()
    return report


async def run_review(cfg: ReviewConfig, view: ReviewView) -> ReviewSummary:
    """Run the lead to its final answer, write the report, return the summary."""
    if cfg.offline:  # its members run ruff and bandit: the review extra must be installed
        require_engines()
    started = time.monotonic()
    resume = cfg.resume
    ctx = RuntimeContext(session_id=resume.session_id if resume else new_id("review-"))
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(open_store(cfg.store_url))
        await _check_shared(store, cfg.workers)
        if resume is None:
            await record_review(store, ctx.session_id, cfg.record())
        view.start(cfg.target, cfg.model.model_name, cfg.offline)
        watcher = Watcher(LocalTeamClient(store, ctx), view)
        watcher.team_id = resume.team_id if resume else None
        extension = TeamLeadExtension(
            cfg.specs, run_members="workers" if cfg.workers else "local", poll=POLL_SECONDS
        )
        stack.push_async_callback(extension.aclose)
        lead = _lead(cfg, store, extension)
        stack.push_async_callback(lead.mcp.aclose)  # the git MCP server of --changed-since
        log = await _start_workers(cfg, stack) if cfg.workers else None
        try:
            with anyio.fail_after(cfg.timeout):
                if resume is not None and resume.answer is not None:
                    report = resume.answer  # the lead had answered: only the report was lost
                else:
                    report = await _drive(lead, cfg.instruction(), ctx, view, watcher)
        except TimeoutError:
            raise CommandError(_timeout_message(cfg, watcher, log)) from None
        await watcher.poll()
        if watcher.team_id is not None:  # members stop; workers no longer serve the team
            await watcher.client.set_team_status(watcher.team_id, TeamStatus.COMPLETED)
            if cfg.workers:
                await _meter_worker_members(store, ctx, watcher.team_id)
    if log is not None:
        await anyio.Path(log).unlink(missing_ok=True)
    if watcher.team_id is not None:
        changes = None
        if cfg.changes is not None:
            lines = await anyio.to_thread.run_sync(cfg.changes.changed_lines)
            changes = Changes(cfg.changes.ref, lines)
        report = board_report(watcher.tasks, cfg.target, cfg.model.model_name, changes)
    await anyio.Path(cfg.output).write_text(report if report.endswith("\n") else report + "\n")
    elapsed = time.monotonic() - started
    return summarize(cfg, watcher.tasks, elapsed, team_id=watcher.team_id, session=ctx)


def board_report(
    tasks: Sequence[Task], target: str, model_label: str, changes: Changes | None = None
) -> str:
    """review.md from the findings data of the review's ``tasks``: the members are the tasks'
    assignees (or owners), the files those the members say they reviewed. The text of a task
    result is not read. (Without a team, nothing was shared out: the lead's answer, which says
    why, is the report.)"""
    members = list(dict.fromkeys(m for t in tasks if (m := t.assignee or t.owner)))
    board = board_findings(tasks, members)
    return review_report(
        board, target, model_label, files=board.files, members=members, changes=changes
    )


def _timeout_message(cfg: ReviewConfig, watcher: Watcher, log: Path | None) -> str:
    done = sum(1 for t in watcher.tasks if t.status is TaskStatus.COMPLETED)
    where = f"; see `agentscope-teams team tasks {watcher.team_id}`" if watcher.team_id else ""
    logs = f"; worker output is in {log}" if log is not None else ""
    return (
        f"the review of {cfg.target} did not finish within {cfg.timeout:g} seconds "
        f"({done} of {len(watcher.tasks)} tasks done){where}{logs}; raise --timeout"
    )
