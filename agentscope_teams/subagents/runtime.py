"""Executing child runs: a per-extension :class:`Runner` owning one asyncio task per run.

A run must outlive the tool call that spawned it (and the parent's whole call), so it does not run in
the caller's task group: :meth:`Runner.start` creates an asyncio task (in a fresh ``contextvars``
context) and keeps a strong reference until it ends. Inside it a heartbeat renews the run's lease every
``lease_ttl / 3`` and reads the record: ``cancel_requested`` (set by ``agent_cancel`` in another process)
or a record someone marked ``lost`` stops the child.

A run's descendants never outlive it: when it ends, the runs its child started and that are still
going are cancelled too (their results would land in an inbox nobody reads).

Crash semantics: if the process dies, nothing renews the lease; it expires after ``lease_ttl`` and the
next reader marks the run ``lost`` and posts a "lost" notice to the parent's inbox. A clean shutdown
(:meth:`Runner.aclose`, or the event loop cancelling the task) marks it ``lost`` right away.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from .. import tracing
from ..agent.harness import SessionAgent
from ..agent.lease import Lease
from ..agent.output import OutputType
from ..agent.react import TURN_LIMIT
from ..agent.verifier import hook_verifier
from ..context import RuntimeContext
from ..errors import ConfigurationError, public_message
from ..hooks import Hooks
from ..message import OUTPUT_KEY, Msg, utcnow
from ..state import AgentState
from ..store.base import Key
from ..usage import Budget, add_budget
from .child import answer_of, seed_session
from .runs import RunBook, RunRecord, RunStatus
from .stops import subagent_stop
from .workspace import remove

log = logging.getLogger(__name__)

CANCELLED_BY_PARENT = "cancelled by the parent agent (agent_cancel)"
PARENT_ENDED = "cancelled because the run that spawned it ended"
SHUTDOWN = "the process running it shut down before it finished"
MAX_TURNS = 20  # one call plus the follow-up turns for messages queued while it ran


@dataclass
class Launch:
    """Everything one run needs, prepared by the spawning call."""

    book: RunBook
    record: RunRecord
    child: SessionAgent
    ctx: RuntimeContext
    lease: Lease
    workspace: Path | None = None
    keep_workspace: bool = False
    snapshot: AgentState | None = None
    #: The structured output of the spec (``output:`` / ``output_type``): each turn returns it.
    output: OutputType | None = None
    #: Run in order when the run ends, however it ends (agent memory sync, worktree cleanup);
    #: each may return a note that is appended to the run's result (or error).
    finishers: list[Callable[[], Awaitable[str | None]]] = field(default_factory=list)
    #: The finishers' notes once they ran (None: not yet).
    notes: list[str] | None = None
    #: The child's hooks (the parent's and its spec's): SubagentStop fires on them when the run
    #: ends (see :mod:`.stops`).
    hooks: Hooks | None = None
    #: The parent's working directory (the ``cwd`` of those hook events).
    cwd: str = ""
    #: The run's budget (spec ``maxTokens`` / ``maxBudgetUsd``), on top of those in force.
    budget: Budget | None = None
    #: The most model turns of the whole run (spec ``maxTurns`` / ``steps``; None: each call
    #: has the child's ``max_iters``): turns a SubagentStop hook or a message asks for after it
    #: is reached are not taken.
    turn_limit: int | None = None


@dataclass
class Handle:
    """A run executing in this process."""

    launch: Launch
    record: RunRecord
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    reason: str | None = None

    @property
    def run_id(self) -> str:
        return self.record.run_id

    def cancel(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.scope.cancel()


class Runner:
    """Owns the runs this process executes; see the module docs."""

    def __init__(self, lease_ttl: float) -> None:
        self.lease_ttl = lease_ttl
        self.handles: dict[Key, Handle] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._locks: weakref.WeakValueDictionary[Key, anyio.Lock] = weakref.WeakValueDictionary()

    def lock(self, key: Key) -> anyio.Lock:
        """An in-process lock per parent session (spawns in one step check the limit in turn)."""
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = anyio.Lock()
        return lock

    def handle(self, book: RunBook, run_id: str) -> Handle | None:
        return self.handles.get(book.key(run_id))

    def start(self, launch: Launch) -> Handle:
        try:  # under another anyio backend (trio) no asyncio loop is running
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise ConfigurationError(
                "subagent runs need the asyncio event loop (anyio's default)"
            ) from None
        h = Handle(launch, launch.record)
        key = launch.book.key(h.run_id)
        task = loop.create_task(
            self._run(h), name=f"subagent {h.run_id}", context=tracing.fresh_context()
        )
        self.handles[key] = h
        self._tasks.add(task)

        def forget(t: asyncio.Task[None]) -> None:
            self._tasks.discard(t)
            if self.handles.get(key) is h:
                del self.handles[key]

        task.add_done_callback(forget)
        return h

    async def aclose(self, reason: str = SHUTDOWN) -> None:
        """Stop every run of this process and wait for them to end (``lost`` by default)."""
        for h in list(self.handles.values()):
            h.cancel(reason)
        for h in list(self.handles.values()):
            await h.done.wait()

    async def wait(self, h: Handle, seconds: float) -> bool:
        """Wait up to ``seconds`` for ``h`` to end; True if it did."""
        with anyio.move_on_after(seconds):
            await h.done.wait()
        return h.done.is_set()

    # -- the task ----------------------------------------------------------------------------------

    async def _run(self, h: Handle) -> None:
        status: RunStatus | None = None
        error: str | None = None
        try:
            with h.scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._heartbeat, h)
                    try:
                        await self._converse(h)
                    except Exception as exc:
                        status, error = (
                            RunStatus.FAILED,
                            f"{type(exc).__name__}: {public_message(exc)}",
                        )
                    finally:
                        tg.cancel_scope.cancel()
            if h.reason is not None and status is None:
                cancelled = h.reason in (CANCELLED_BY_PARENT, PARENT_ENDED)
                status = RunStatus.CANCELLED if cancelled else RunStatus.LOST
                error = h.reason
        except anyio.get_cancelled_exc_class():
            status, error = RunStatus.LOST, SHUTDOWN
            raise
        finally:
            with anyio.CancelScope(shield=True):
                await self._finish(h, status, error)

    async def _converse(self, h: Handle) -> None:
        """Run the child's turns; the last one writes ``completed`` unless mail arrived meanwhile."""
        launch = h.launch
        book, run_id = launch.book, h.run_id
        await book.update(run_id, _started)
        if launch.snapshot is not None:
            await seed_session(launch.child, launch.ctx, launch.snapshot)
        mail = book.mail(run_id)
        text: str | None = launch.record.task
        continued = False
        turns = _Turns(launch)
        for _ in range(MAX_TURNS):
            turns.before_call()
            run_budget = add_budget(f"run:{run_id}", launch.budget, store=launch.child.store)
            with tracing.joined(launch.record.trace_context), run_budget:
                msg = await launch.child.call(text, launch.ctx, output_type=launch.output)
            spent = await turns.after_call(msg)
            answer, output = answer_of(msg, launch.turn_limit), msg.metadata.get(OUTPUT_KEY)
            stop = await subagent_stop(
                launch.hooks,
                book,
                launch.record,
                launch.cwd,
                final=False,
                stop_hook_active=continued,
                last_message=answer,
                **_judges(launch),
            )
            # exit 2: the reason is its next instruction (unless continue: false, which wins,
            # or its turns are spent)
            if stop is not None and stop.blocked and not stop.stop and not spent:
                text, continued = stop.reason, True
                continue
            # with its turns spent, messages that arrived meanwhile start no further turn
            read = await mail.cursor()
            if launch.finishers:  # their notes belong in the result the parent is notified of
                current = await book.get(run_id)
                queued = current is not None and current.status.active and current.mail_seq > read
                if queued and not spent:
                    text = None
                    continue  # a message arrived: another turn first
                # a message arriving from here to the write below runs them again after its turn
                launch.notes = None
                if notes := await _end_steps(launch):
                    answer = "\n\n".join([answer, *notes])
            hook_stop = stop.stop_reason if stop is not None and stop.stop else None
            done = _completion(launch, answer, output, read, spent, hook_stop)
            rec = await book.update(run_id, done)
            if rec is None or not rec.status.active:
                return
            text = None  # the queued messages are injected by the child's MailExtension
        raise RuntimeError(f"more than {MAX_TURNS} turns for messages sent while it ran")

    async def _heartbeat(self, h: Handle) -> None:
        launch = h.launch
        while True:
            await anyio.sleep(self.lease_ttl / 3)
            try:
                await launch.lease.renew()
                if launch.lease.lost:  # expired or taken: take it again only if nobody holds it
                    fresh = launch.book.lease(h.run_id, self.lease_ttl)
                    if not await fresh.try_acquire():
                        h.cancel("another process took over its lease")
                        return
                    launch.lease = fresh
                rec = await launch.book.get(h.run_id)
                if rec is None or not rec.status.active:
                    h.cancel("it was marked lost after its lease expired")
                    return
                if rec.cancel_requested:
                    h.cancel(CANCELLED_BY_PARENT)
                    return
            except Exception as exc:  # a store hiccup: the lease outlives a few missed beats
                log.warning("heartbeat of subagent run %s failed: %s", h.run_id, exc)

    async def _finish(self, h: Handle, status: RunStatus | None, error: str | None) -> None:
        launch = h.launch
        book, run_id = launch.book, h.run_id
        rec: RunRecord | None = None
        for ext in launch.child.extensions:  # the child's own runs end with it
            runner = getattr(ext, "runner", None)
            if isinstance(runner, Runner):
                await runner.aclose(PARENT_ENDED)
        notes = [] if launch.notes is not None else await _end_steps(launch)
        try:
            if status is not None:
                rec = await book.update(
                    run_id,
                    lambda r: r.finished(status, error=error) if r.status.active else None,
                )
            else:
                rec = await book.get(run_id)
            if notes:
                rec = await book.update(run_id, lambda r: _noted(r, notes)) or rec
            if rec is not None and not rec.status.active and rec.background and not rec.notified:
                rec = await book.notify(rec)
            if rec is not None and not rec.status.active:
                await subagent_stop(launch.hooks, book, rec, launch.cwd, **_judges(launch))
        except Exception as exc:
            log.warning("could not record the end of subagent run %s: %s", run_id, exc)
        try:
            dropped = status is RunStatus.CANCELLED or not launch.keep_workspace
            if launch.workspace is not None and dropped:
                await remove(launch.workspace)
            await launch.lease.release()
        except Exception as exc:
            log.warning("could not clean up subagent run %s: %s", run_id, exc)
        h.record = rec or h.record
        h.done.set()


def _judges(launch: Launch) -> dict[str, Any]:
    """The child's model and a verifier in its workspace, for its SubagentStop's prompt and
    agent hooks, and its MCP servers for its mcp_tool hooks."""
    child = launch.child
    runner = hook_verifier(None, Path(launch.cwd), child.loop.permissions)
    servers = child.hook_servers(launch.ctx) if launch.hooks else None
    return {"model": child.model, "agent_runner": runner, "servers": servers}


def _started(r: RunRecord) -> RunRecord | None:
    """``r`` running, if it is pending."""
    if r.status is not RunStatus.PENDING:
        return None
    return r.model_copy(update={"status": RunStatus.RUNNING, "started_at": utcnow()})


#: Added to the result of a run that ended at its turn limit with messages it did not read.
UNREAD_MAIL = (
    "[messages sent to it with agent_send were not read: it had used all its turns (maxTurns); "
    "send them again to continue it in a new run]"
)


def _completion(
    launch: Launch,
    answer: str,
    output: Any,
    read: int,
    spent: bool,
    hook_stop: str | None = None,
) -> Callable[[RunRecord], RunRecord | None]:
    """The change that records the run completed with ``answer``, unless it ended elsewhere or
    a message arrived after ``read`` (another turn), or, with its turns ``spent``, noting it.
    ``hook_stop``: the ``stopReason`` of a SubagentStop hook's ``continue: false`` that ended it
    (recorded as :attr:`RunRecord.hook_stop`, told to the parent)."""

    def complete(r: RunRecord) -> RunRecord | None:
        if not r.status.active:
            return None  # finished elsewhere
        result = answer
        if r.mail_seq > read:
            if not spent:
                return None  # a message arrived: another turn
            result = f"{answer}\n\n{UNREAD_MAIL}"
        done = r.finished(RunStatus.COMPLETED, result=result)
        if hook_stop is not None:
            done = done.model_copy(update={"hook_stop": hook_stop})
        return done if launch.output is None else done.model_copy(update={"output": output})

    return complete


class _Turns:
    """The model turns of a run with a ``turn_limit``, counted over its calls (a blocked
    SubagentStop, a message read while it ran): each call gets what is left."""

    def __init__(self, launch: Launch) -> None:
        self.launch, self.used = launch, 0
        self.config = launch.child.loop.config

    def before_call(self) -> None:
        limit = self.launch.turn_limit
        if limit is not None:
            left = max(limit - self.used, 1)
            self.launch.child.loop.config = self.config.model_copy(update={"max_iters": left})

    async def after_call(self, msg: Msg) -> bool:
        """Count the call's turns; True when the run's turns are spent."""
        limit = self.launch.turn_limit
        if limit is None:
            return False
        if msg.metadata.get(TURN_LIMIT):
            return True
        state = await self.launch.child.get_agent_state(self.launch.ctx)
        self.used += state.cur_iter
        return self.used >= limit


async def _end_steps(launch: Launch) -> list[str]:
    """Run ``launch.finishers``; their notes (a finisher that fails is logged, and noted)."""
    notes: list[str] = []
    for finisher in launch.finishers:
        try:
            note = await finisher()
        except Exception as exc:
            log.warning("subagent run %s: end step failed: %s", launch.record.run_id, exc)
            note = f"[could not finish the run cleanly: {public_message(exc)}]"
        if note:
            notes.append(note)
    launch.notes = notes
    return notes


def _noted(r: RunRecord, notes: list[str]) -> RunRecord | None:
    """``r`` with ``notes`` after its result (or its error, when it did not complete)."""
    if r.status.active:
        return None
    text = "\n\n".join(notes)
    if r.status is RunStatus.COMPLETED:
        return r.model_copy(update={"result": f"{r.result or ''}\n\n{text}".lstrip()})
    return r.model_copy(update={"error": f"{r.error or ''}\n\n{text}".lstrip()})
