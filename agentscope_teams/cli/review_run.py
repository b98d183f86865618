"""One ``agentscope-teams review`` run: the lead, its team, the watcher and the report.

The lead is a :class:`HarnessAgent` with the team tools (``TeamLeadExtension``); its members run in this
process (default) or in ``--workers N`` worker processes that take them from the shared store. While
the lead runs, a watcher polls the same store through :class:`LocalTeamClient` for the task board and
the team's messages and hands them to the view. A new review records how it started in its lead
session (:mod:`.review_resume`); a resumed one (``cfg.resume``) calls the lead on that session again.

The report (``--output``) is rendered from the findings data on the board (:func:`board_report`),
not taken from the lead's text: every finding in it is one a member completed its task with.
A spent budget stops the lead: the report holds what was found so far and says so
(:mod:`.review_budget`); the team stays as an interrupted review's, for ``--resume``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import AsyncExitStack, aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import anyio

from ..agent import ReActConfig
from ..agent.config import CompressionConfig
from ..agent.failures import BudgetOverrun
from ..compose import HarnessAgent
from ..context import RuntimeContext
from ..events import ReplyEndEvent, ToolResultEvent
from ..message import new_id
from ..model import ChatModel
from ..review.engines import require_engines
from ..review.report import Changes, board_findings, review_report
from ..store.base import BaseStore
from ..teams import LocalTeamClient, Task, TaskStatus, TeamLeadExtension, TeamMessage, TeamStatus
from ..teams.results import TeamCreated
from ..tools import filesystem_tools, output_of
from .common import CommandError, open_store
from .review_budget import budget_stop_of, stop_line
from .review_changes import LEAD_GIT_TOOLS, ChangedSince
from .review_resume import (
    LEAD,
    RESUME_INSTRUCTION,
    Interrupted,
    ReviewRecord,
    record_review,
    update_review,
)
from .review_stats import summarize
from .review_view import ReviewSummary, ReviewView
from .review_workers import check_shared, meter_worker_members, start_workers
from .usage_option import UsageOptions

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
    #: The review's budget (the lead session's, which every member draws on) and rate limit.
    usage: UsageOptions = field(default_factory=UsageOptions)

    def record(self) -> ReviewRecord:
        return ReviewRecord(
            path=str(self.path),
            target=self.target,
            output=str(self.output.resolve()),
            model=self.model_arg,
            specs=str(self.specs),
            changed_since=self.changes.ref if self.changes else None,
            budget=self.usage.budget,
            rate_limit=self.usage.rate_limit,
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
        usage=cfg.usage.governor(store, "session"),  # the members inherit it, or read it
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
    """Run the lead to its final answer (or until the review's budget is spent), write the
    report, return the summary."""
    if cfg.offline:  # its members run ruff and bandit: the review extra must be installed
        require_engines()
    started = time.monotonic()
    resume = cfg.resume
    ctx = RuntimeContext(session_id=resume.session_id if resume else new_id("review-"))
    async with AsyncExitStack() as stack:
        store = await stack.enter_async_context(open_store(cfg.store_url))
        await check_shared(store, cfg.workers)
        await _record(cfg, store, ctx)
        view.start(cfg.target, cfg.model.model_name, cfg.offline)
        watcher = Watcher(LocalTeamClient(store, ctx), view)
        watcher.team_id = resume.team_id if resume else None
        extension = TeamLeadExtension(
            cfg.specs, run_members="workers" if cfg.workers else "local", poll=POLL_SECONDS
        )
        stack.push_async_callback(extension.aclose)
        lead = _lead(cfg, store, extension)
        stack.push_async_callback(lead.mcp.aclose)  # the git MCP server of --changed-since
        log = await start_workers(cfg, stack, POLL_SECONDS) if cfg.workers else None
        answer, stop = await _answer(cfg, lead, ctx, view, watcher, log)
        await watcher.poll()
        if watcher.team_id is not None:
            if stop is None:  # members stop; workers no longer serve the team
                await watcher.client.set_team_status(watcher.team_id, TeamStatus.COMPLETED)
            if cfg.workers:
                await meter_worker_members(store, ctx, watcher.team_id)
    if log is not None:
        await anyio.Path(log).unlink(missing_ok=True)
    report = await _report(cfg, watcher, answer, stop)
    await anyio.Path(cfg.output).write_text(report if report.endswith("\n") else report + "\n")
    elapsed = time.monotonic() - started
    return summarize(
        cfg, watcher.tasks, elapsed, team_id=watcher.team_id, session=ctx, budget_stop=stop
    )


async def _record(cfg: ReviewConfig, store: BaseStore, ctx: RuntimeContext) -> None:
    """Record how the review runs in its lead session: a new one's record, or a resumed one's
    with the options given again (a budget, a model, ...)."""
    if cfg.resume is None:
        await record_review(store, ctx.session_id, cfg.record())
    elif cfg.record() != cfg.resume.record:
        await update_review(store, ctx.session_id, cfg.record())


async def _answer(
    cfg: ReviewConfig,
    lead: HarnessAgent,
    ctx: RuntimeContext,
    view: ReviewView,
    watcher: Watcher,
    log: Path | None,
) -> tuple[str, BudgetOverrun | None]:
    """The lead's answer (a resumed lead's earlier one, if it had answered), or the budget that
    stopped it; a timeout is a CommandError."""
    resume = cfg.resume
    try:
        with anyio.fail_after(cfg.timeout):
            if resume is not None and resume.answer is not None:
                return resume.answer, None  # the lead had answered: only the report was lost
            return await _drive(lead, cfg.instruction(), ctx, view, watcher), None
    except TimeoutError:
        raise CommandError(_timeout_message(cfg, watcher, log)) from None
    except Exception as exc:
        stop = budget_stop_of(exc)
        if stop is None:
            raise
        return "", stop


async def _report(
    cfg: ReviewConfig, watcher: Watcher, answer: str, stop: BudgetOverrun | None
) -> str:
    """review.md: from the board's findings data (a budget stop says so at its top); without a
    team and without a stop, the lead's answer, which says why nothing was shared out."""
    if watcher.team_id is None and stop is None:
        return answer
    changes = None
    if cfg.changes is not None:
        lines = await anyio.to_thread.run_sync(cfg.changes.changed_lines)
        changes = Changes(cfg.changes.ref, lines)
    stopped = stop_line(stop) if stop is not None else None
    return board_report(watcher.tasks, cfg.target, cfg.model.model_name, changes, stopped)


def board_report(
    tasks: Sequence[Task],
    target: str,
    model_label: str,
    changes: Changes | None = None,
    stopped: str | None = None,
) -> str:
    """review.md from the findings data of the review's ``tasks``: the members are the tasks'
    assignees (or owners), the files those the members say they reviewed. The text of a task
    result is not read. ``stopped`` says why the review stopped early (a spent budget). (Without
    a team, nothing was shared out: the lead's answer, which says why, is the report.)"""
    members = list(dict.fromkeys(m for t in tasks if (m := t.assignee or t.owner)))
    board = board_findings(tasks, members)
    return review_report(
        board,
        target,
        model_label,
        files=board.files,
        members=members,
        changes=changes,
        stopped=stopped,
    )


def _timeout_message(cfg: ReviewConfig, watcher: Watcher, log: Path | None) -> str:
    done = sum(1 for t in watcher.tasks if t.status is TaskStatus.COMPLETED)
    where = f"; see `agentscope-teams team tasks {watcher.team_id}`" if watcher.team_id else ""
    logs = f"; worker output is in {log}" if log is not None else ""
    return (
        f"the review of {cfg.target} did not finish within {cfg.timeout:g} seconds "
        f"({done} of {len(watcher.tasks)} tasks done){where}{logs}; raise --timeout"
    )
