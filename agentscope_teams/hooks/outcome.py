"""What hooks decided: one :class:`HookOutcome` from the answers of every hook that ran.

Exit code 0: stdout is read as JSON if it is a JSON object (else, for ``UserPromptSubmit`` and
``SessionStart``, it is context for the model); an http hook's 2xx body is read the same way.
Exit code 2: the event is blocked and stderr is the reason. Any other code, or a timeout: a
non-blocking error, logged. A prompt hook's ``ok``/``reason`` is read by :func:`from_verdict`.
Several hooks combine: any block blocks, ``deny`` beats ``defer`` beats ``ask`` beats ``allow``
(Claude Code's order), contexts and reasons are joined.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from .command import CommandResult
from .config import GUARD_EVENTS
from .hook import Hook

__all__ = ["HookOutcome", "failed", "from_command", "from_json", "from_stdout", "from_verdict"]

log = logging.getLogger(__name__)

_PLAIN_CONTEXT = ("UserPromptSubmit", "SessionStart")
_STOP_EVENTS = ("Stop", "SubagentStop")
_RANK = {"allow": 1, "ask": 2, "defer": 3, "deny": 4}

#: Events besides Stop/SubagentStop whose ``ok: false`` (a prompt or agent hook) blocks as exit 2
#: does: a task's creation and its completion (:func:`from_verdict`).
_GATE_EVENTS = ("TaskCreated", "TaskCompleted")


@dataclass
class HookOutcome:
    """The combined decision of the hooks of one event.

    ``blocked`` with ``reason``: exit 2 or ``decision: "block"``. ``permission`` is a
    PreToolUse ``permissionDecision`` (allow / deny / ask / defer) with ``permission_reason``.
    ``stop`` (``continue: false``) ends the agent's reply with ``stop_reason``. ``blocked_by``
    names (:attr:`Hook.label <agentscope_teams.hooks.config.Hook.label>`) the hooks that blocked
    or denied. ``messages`` are ``systemMessage`` warnings for the user. ``wakes`` are
    ``(hook label, stderr)`` of ``asyncRewake`` hooks that exited 2 (:mod:`.background`).
    """

    blocked: bool = False
    reason: str = ""
    permission: str | None = None
    permission_reason: str = ""
    updated_input: dict[str, Any] | None = None
    context: list[str] = field(default_factory=list)
    stop: bool = False
    stop_reason: str = ""
    errors: list[str] = field(default_factory=list)
    blocked_by: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    wakes: list[tuple[str, str]] = field(default_factory=list)

    @property
    def additional_context(self) -> str:
        return "\n".join(c for c in self.context if c)

    def add(self, other: HookOutcome) -> None:
        """Fold ``other`` (one more hook's answer) into this outcome."""
        if other.blocked:
            self.blocked = True
            self.reason = "\n".join(r for r in (self.reason, other.reason) if r)
        if other.permission and _RANK[other.permission] > _RANK.get(self.permission or "", 0):
            self.permission, self.permission_reason = other.permission, other.permission_reason
        if other.updated_input is not None:
            self.updated_input = other.updated_input
        self.context += other.context
        if other.stop:
            self.stop = True
            self.stop_reason = self.stop_reason or other.stop_reason
        self.errors += other.errors
        self.blocked_by += other.blocked_by
        self.messages += other.messages
        self.wakes += other.wakes

    @property
    def notices(self) -> list[str]:
        """What the user is shown: ``systemMessage`` warnings, then hooks that failed."""
        return [*self.messages, *self.errors]


def from_json(event: str, data: dict[str, Any]) -> HookOutcome:
    """A hook's JSON answer (a command's stdout or a Python hook's return value)."""
    out = HookOutcome()
    if data.get("systemMessage"):
        out.messages.append(str(data["systemMessage"]))
    if data.get("continue") is False:
        out.stop = True
        out.stop_reason = str(data.get("stopReason") or "")
    if data.get("decision") == "block":
        out.blocked = True
        out.reason = str(data.get("reason") or f"blocked by a {event} hook")
    elif data.get("decision") == "approve" and event == "PreToolUse":  # the older spelling
        out.permission, out.permission_reason = "allow", str(data.get("reason") or "")
    specific = data.get("hookSpecificOutput")
    if isinstance(specific, dict):
        decision = specific.get("permissionDecision")
        if decision in _RANK:
            out.permission = decision
            out.permission_reason = str(specific.get("permissionDecisionReason") or "")
        verdict = specific.get("decision")  # PermissionRequest: {behavior: allow | deny}
        if isinstance(verdict, dict) and verdict.get("behavior") in ("allow", "deny"):
            out.permission = verdict["behavior"]
            out.permission_reason = str(verdict.get("message") or "")
            if isinstance(verdict.get("updatedInput"), dict):
                out.updated_input = dict(verdict["updatedInput"])
        if isinstance(specific.get("updatedInput"), dict):
            out.updated_input = dict(specific["updatedInput"])
        if specific.get("additionalContext"):
            out.context.append(str(specific["additionalContext"]))
    if isinstance(data.get("updatedInput"), dict) and out.updated_input is None:
        out.updated_input = dict(data["updatedInput"])
    if data.get("additionalContext") and not out.context:
        out.context.append(str(data["additionalContext"]))
    return out


def from_command(event: str, label: str, result: CommandResult) -> HookOutcome:
    """A command hook's answer from its exit code and output (see the module docstring)."""
    if result.timed_out:
        msg = f"hook {label} timed out; its process group was killed"
        log.warning(msg)
        return HookOutcome(errors=[msg])
    if result.code == 2:
        reason = result.stderr.strip() or f"blocked by a {event} hook"
        return HookOutcome(blocked=True, reason=reason)
    if result.code != 0:
        msg = f"hook {label} failed with exit code {result.code}: {result.stderr.strip()}"
        log.warning(msg)
        return HookOutcome(errors=[msg])
    return from_stdout(event, label, result.stdout)


def from_stdout(event: str, label: str, stdout: str) -> HookOutcome:
    """A hook's successful answer as text (a command's stdout, an http hook's 2xx body): a JSON
    object is read by :func:`from_json`; other text is context for ``UserPromptSubmit`` and
    ``SessionStart``, else ignored."""
    text = stdout.strip()
    errors: list[str] = []
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError as exc:
            data = None
            msg = f"hook {label} answered invalid JSON ({exc}); its answer is read as plain text"
            log.warning(msg)
            errors.append(msg)
        if isinstance(data, dict):
            return from_json(event, data)
    if text and event in _PLAIN_CONTEXT:
        return HookOutcome(context=[text], errors=errors)
    return HookOutcome(errors=errors)


def from_verdict(event: str, ok: bool, reason: str) -> HookOutcome:
    """A prompt (or agent) hook's ``{"ok": ..., "reason": ...}``: ``ok: false`` on ``Stop`` /
    ``SubagentStop`` blocks the stop (the reason is the agent's next instruction), as Claude Code
    reads it; on any other event Claude Code ends the turn (``continue: false``), the reason shown
    to the user as a warning. We read it as a block on ``TaskCreated`` and ``TaskCompleted`` too
    (:data:`_GATE_EVENTS`): a model-judged gate that says no refuses the task, or keeps the member
    working on the same task, with the reason as feedback, as exit 2 does, where Claude Code would
    stop the teammate (and count the completion)."""
    if ok:
        return HookOutcome()
    reason = reason.strip() or f"a {event} prompt hook answered ok: false"
    if event in _STOP_EVENTS or event in _GATE_EVENTS:
        return HookOutcome(blocked=True, reason=reason)
    return HookOutcome(stop=True, stop_reason=reason)


def cannot_answer(hook: Hook, what: str, fix: str) -> HookOutcome:
    """``hook`` gave no answer because it ``what`` (``"is not run: ..."``): on a guard event
    (:data:`~.config.GUARD_EVENTS`) a denial the model reads, since a guard that cannot run must
    never let calls through; elsewhere a non-blocking error. Both say ``fix``, what to do."""
    if hook.event not in GUARD_EVENTS:
        return failed(hook.label, f"{what}; {fix}")
    reason = (
        f"denied: the {hook.event} hook {hook.label} {what}, so it cannot approve the call; {fix}"
    )
    return HookOutcome(permission="deny", permission_reason=reason, errors=[reason])


def failed(label: str, what: str) -> HookOutcome:
    """A hook that could not answer: a non-blocking error, logged and shown to the user."""
    msg = f"hook {label} {what}"
    log.warning(msg)
    return HookOutcome(errors=[msg])
