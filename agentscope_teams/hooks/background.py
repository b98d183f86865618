"""``async: true`` command hooks: started in the background, ended with the agent call.

As Claude Code runs them: the event does not wait, and nothing the hook answers decides anything
(no block, deny, ask, updated input or stop: by the time it answers, the call has gone on), so an
async guard guards nothing. What it says for the model (``additionalContext``, ``systemMessage``)
is kept in the session's state and given to the model with the session's next prompt (Claude
Code: "on the next conversation turn"), so it survives a restart and reaches whichever process
serves that prompt (:func:`keep_for_next_turn`, :func:`next_turn_context`).

Unlike Claude Code, whose session outlives a hook, an agent call here is one request: the hooks it
started are awaited when it ends, each until its own ``timeout`` (counted from its start) and
killed with its process group at its timeout (a timer, also while the call still runs); a
call that is cancelled or fails kills them at once
(:class:`BackgroundHooks`, opened by the agent around each call whose hooks include an async
one). Fired where no call is open (a
team client's task events), an async hook runs in the foreground, its decisions still unheeded.
As a last guard, any process group still running when the interpreter exits is killed.

``asyncRewake: true`` runs a hook in the background as ``async`` does; when it exits 2, Claude
Code wakes the model with its stderr (at once, even when the turn had ended). Here the call that
started it waits for it at its end as for any async hook, and its stderr is kept in the session
(:data:`WAKES`) and given to the model at the start of the session's next call, as a system
reminder just before the new prompt (:func:`next_call_wake`): the reply already returned its
answer, so the wake is the next conversation turn's first news.

The hook's stdin, stdout and stderr are temporary files, not pipes, so it runs on while nothing
reads it.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import tempfile
from contextvars import ContextVar, Token
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import anyio
from anyio.abc import Process

from ..state import AgentState
from .command import CommandResult, hook_env, kill_group
from .hook import Hook
from .outcome import HookOutcome, from_command

__all__ = [
    "BackgroundHooks",
    "current_background",
    "keep_for_next_turn",
    "next_call_wake",
    "next_turn_context",
    "unheeded",
]

log = logging.getLogger(__name__)

_current: ContextVar[BackgroundHooks | None] = ContextVar("background_hooks", default=None)

_live: set[int] = set()
"""Process groups of async hooks still running in this process (killed at exit)."""

HELD = "hook_context"
"""The ``AgentState.middle_context`` key of what async hooks said for the next turn."""

WAKES = "hook_wakes"
"""The ``AgentState.middle_context`` key of the wakes of ``asyncRewake`` hooks not yet given to
the model: ``[{"hook": label, "text": stderr}, ...]``."""


@atexit.register
def _kill_live() -> None:
    for pid in list(_live):
        kill_group(pid)


@dataclass
class _Job:
    hook: Hook
    process: Process
    out: IO[bytes]
    err: IO[bytes]
    deadline: float
    timer: asyncio.TimerHandle | None = None
    expired: bool = False

    def expire(self) -> None:
        """Its timeout is up (while the call still runs): its process group is killed."""
        self.expired = True
        kill_group(self.process.pid)

    def stop(self, *, kill: bool) -> None:
        """Done with it: its timer cancelled, its group killed if ``kill``."""
        if self.timer is not None:
            self.timer.cancel()
        if kill:
            kill_group(self.process.pid)
        _live.discard(self.process.pid)


def _files(payload: dict[str, Any]) -> tuple[IO[bytes], IO[bytes], IO[bytes]]:
    """The hook's stdin (``payload`` written), stdout and stderr: temporary files, left open."""
    with contextlib.ExitStack() as stack:
        stdin, out, err = (stack.enter_context(tempfile.TemporaryFile()) for _ in range(3))
        stdin.write(json.dumps(payload, ensure_ascii=False, default=str).encode())
        stdin.seek(0)
        stack.pop_all()  # the caller closes them
    return stdin, out, err


def _read(job: _Job) -> tuple[str, str]:
    texts = []
    for f in (job.out, job.err):
        f.seek(0)
        texts.append(f.read(1 << 20).decode(errors="replace"))
        f.close()
    return texts[0], texts[1]


class BackgroundHooks:
    """The async hooks one agent call started: :meth:`open` it when the call starts,
    :meth:`settle` it when the reply is done, :meth:`close` it however the call ends."""

    __slots__ = ("jobs", "token")

    def __init__(self) -> None:
        self.jobs: list[_Job] = []
        self.token: Token[BackgroundHooks | None] | None = None

    @classmethod
    def open(cls, hooks: Any) -> BackgroundHooks | None:
        """The async hooks fired from here on in this task (and the tasks it starts) are started
        in the returned object; None (nothing is set) when ``hooks`` (a
        :class:`~.runner.Hooks`, or None) has no async hook, the common case, which costs a call
        nothing."""
        if not (hooks and hooks.has_background):
            return None
        running = cls()
        running.token = _current.set(running)
        return running

    def close(self) -> None:
        """End the scope :meth:`open` set; a hook still running (the call failed or was
        cancelled before :meth:`settle`) is killed."""
        if self.token is not None:
            _current.reset(self.token)
            self.token = None
        self.kill()

    async def start(self, hook: Hook, payload: dict[str, Any], project_dir: Path) -> None:
        """Start ``hook``'s command with ``payload`` on stdin; it is not waited for."""
        assert hook.command is not None
        stdin, out, err = await anyio.to_thread.run_sync(_files, payload)
        try:
            process = await anyio.open_process(
                ["/bin/sh", "-c", hook.command],
                stdin=stdin,
                stdout=out,
                stderr=err,
                cwd=str(project_dir),
                env=hook_env(project_dir),
                start_new_session=True,
            )
        except BaseException:
            out.close()
            err.close()
            raise
        finally:
            stdin.close()
        _live.add(process.pid)
        job = _Job(hook, process, out, err, anyio.current_time() + hook.timeout)
        job.timer = asyncio.get_running_loop().call_later(hook.timeout, job.expire)  # no task
        self.jobs.append(job)

    async def settle(self) -> HookOutcome:
        """Wait for each hook until its deadline (then kill its group); their combined answer,
        decisions left out (:func:`unheeded`)."""
        outcome = HookOutcome()
        try:
            while self.jobs:
                job = self.jobs[0]
                code: int | None = None
                with anyio.move_on_after(max(0.0, job.deadline - anyio.current_time())):
                    code = await job.process.wait()
                outcome.add(await self._finish(job, code))
        except BaseException:
            self.kill()
            raise
        return outcome

    async def _finish(self, job: _Job, code: int | None) -> HookOutcome:
        self.jobs.remove(job)
        pid = job.process.pid
        job.stop(kill=code is None)  # not ended by its deadline: killed, as a foreground hook
        if job.expired:
            code = None  # killed on its timeout
        with anyio.CancelScope(shield=True):
            await job.process.aclose()
        stdout, stderr = await anyio.to_thread.run_sync(_read, job)
        result = CommandResult(code, stdout, stderr, pid)
        return unheeded(job.hook, from_command(job.hook.event, job.hook.label, result))

    def kill(self) -> None:
        """Kill every hook still running (the call was cancelled or failed)."""
        for job in self.jobs:
            job.stop(kill=True)
            for f in (job.out, job.err):
                f.close()
        self.jobs.clear()


def current_background() -> BackgroundHooks | None:
    """The :class:`BackgroundHooks` of the agent call this code runs in, if any."""
    return _current.get()


def unheeded(hook: Hook, answer: HookOutcome) -> HookOutcome:
    """An async hook's ``answer`` with only what Claude Code keeps of it: its ``systemMessage``
    and ``additionalContext``, both for the model's next turn, its errors, and for an
    ``asyncRewake`` hook the stderr of an exit 2 (a wake); a decision it tried to make is logged
    as not heeded."""
    woke = hook.rewake and answer.blocked and not answer.permission and not answer.stop
    if (
        (not woke and answer.blocked)
        or answer.permission
        or answer.stop
        or (answer.updated_input is not None)
    ):
        log.warning(
            "hook %s runs async: its decision is not heeded (Claude Code's rule)", hook.label
        )
    wakes = [(hook.label, answer.reason)] if hook.rewake and answer.blocked else []
    return HookOutcome(
        context=[*answer.context, *answer.messages], errors=answer.errors, wakes=wakes
    )


def keep_for_next_turn(state: AgentState, answer: HookOutcome) -> None:
    """Keep what async hooks said for the model in ``state`` until the next prompt."""
    texts = [c for c in answer.context if c]
    if texts:
        state.middle_context.setdefault(HELD, []).extend(texts)
    if answer.wakes:
        wakes = [{"hook": label, "text": text} for label, text in answer.wakes]
        state.middle_context.setdefault(WAKES, []).extend(wakes)


def next_turn_context(state: AgentState) -> str:
    """What async hooks said since the last prompt (taken out of ``state``): context for the
    model with this prompt."""
    held = state.middle_context.pop(HELD, None)
    return "\n".join(str(t) for t in held) if isinstance(held, list) else ""


def next_call_wake(state: AgentState) -> str:
    """The wakes of ``asyncRewake`` hooks since the last prompt (taken out of ``state``), as one
    system reminder for the model ("" when none)."""
    held = state.middle_context.pop(WAKES, None)
    if not isinstance(held, list) or not held:
        return ""
    lines = [
        f"- hook {w.get('hook', '?')}: {w.get('text', '')}" for w in held if isinstance(w, dict)
    ]
    return (
        "<system-reminder>\nA background hook (asyncRewake) exited with code 2 after your last "
        "reply; what it reported:\n" + "\n".join(lines) + "\n</system-reminder>"
    )
