"""What ``agentscope-teams run`` shows while the lead works, and the summary at the end.

Plain lines (a terminal, a pipe or a log read the same): the lead's streamed tokens as they come,
``-> tool(args)`` for each call and ``<- tool: result`` for each result (the whole result of a
subagent or of ``waitForTeam``, a line for other tools), hooks' notices (``[hook] ...``: a
``systemMessage``, a failed hook) and, when a hook stopped the reply, ``stopped by a hook:`` and
its reason (Claude Code shows the user a ``stopReason``); when a hook deferred a tool call, which
call and the command that resumes it; task-board changes and team messages from
the :class:`~.review_run.Watcher`, then a summary. ``--json`` prints every event as one JSON line
(text deltas included) and ends with a ``run_end`` object.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..agent.acting import HOOK_HINT
from ..agent.react import STOPPED_BY_HOOK
from ..events import (
    AgentEvent,
    HintEvent,
    ModelCallEndEvent,
    ReplyEndEvent,
    RequireUserConfirmEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolDeferredEvent,
    ToolResultEvent,
)
from ..teams import Task, TeamMessage
from .common import abbreviate, print_json_line
from .safe_text import terminal_safe

#: Tools whose result is the outcome of delegated work: shown in full (up to RESULT_LINES lines).
RESULT_TOOLS = frozenset({"agent_spawn", "agent_wait", "agent_send", "waitForTeam"})
RESULT_LINES = 20


@dataclass
class RunSummary:
    """Counts of one run, shown at the end."""

    session_id: str
    model: str
    seconds: float = 0.0
    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tool_calls: Counter[str] = field(default_factory=Counter)
    team_id: str | None = None
    tasks: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        tools = ", ".join(f"{n} x{c}" for n, c in sorted(self.tool_calls.items())) or "none"
        lines = [
            f"run finished in {self.seconds:.1f}s with {self.model}",
            f"model calls (lead): {self.model_calls}, tokens {self.input_tokens} in / "
            f"{self.output_tokens} out",
            f"tool calls (lead): {tools}",
            f"subagents spawned: {self.tool_calls['agent_spawn']}",
        ]
        if self.team_id is not None:
            board = ", ".join(f"{c} {s}" for s, c in sorted(self.tasks.items())) or "no tasks"
            lines.append(f"team {self.team_id}: {board}")
        lines.append(f"session {self.session_id} (continue with --session {self.session_id})")
        return lines


class RunView:
    """Prints the run as it happens; :meth:`board` and :meth:`message` serve the Watcher."""

    def __init__(self, summary: RunSummary, *, json: bool, resume: str = "") -> None:
        self.summary, self.json = summary, json
        #: The command that continues this run's session (shown when a hook deferred a call).
        self.resume = resume
        self._midline = False  # streamed text was printed without a newline yet
        self._held: list[str] = []  # board lines waiting for the streamed line to end
        self._board: tuple[tuple[str, int], ...] = ()

    def agent_event(self, event: AgentEvent) -> None:
        if isinstance(event, ModelCallEndEvent):
            self.summary.model_calls += 1
            self.summary.input_tokens += event.usage.input_tokens
            self.summary.output_tokens += event.usage.output_tokens
        elif isinstance(event, ToolCallEvent):
            self.summary.tool_calls[event.tool_call.name] += 1
        if self.json:
            print_json_line(event.model_dump(mode="json"))
        elif isinstance(event, TextDeltaEvent):
            self._stream(terminal_safe(event.text, multiline=True))
        elif isinstance(event, ToolCallEvent):
            call = event.tool_call
            self._line(f"-> {call.name}({abbreviate(_args(call.input), 100)})")
        elif isinstance(event, ToolResultEvent):
            self._result(event)
        elif isinstance(event, HintEvent) and event.text.startswith(HOOK_HINT):
            self._line(event.text)  # a hook's warning to the user (systemMessage), or its failure
        elif isinstance(event, ReplyEndEvent) and event.msg.metadata.get(STOPPED_BY_HOOK):
            self._line(f"stopped by a hook: {event.msg.get_text_content()}")
        elif isinstance(event, RequireUserConfirmEvent):
            names = ", ".join(c.name for c in event.tool_calls)
            self._line(
                f"?? {names} needs confirmation, which run cannot ask for: the reply stops here "
                "(allow the tool with a permission rule, or answer through the Python API)"
            )
        elif isinstance(event, ToolDeferredEvent):
            names = ", ".join(f"{c.name} ({c.id})" for c in event.tool_calls)
            self._line(f"|| {names} deferred by a PreToolUse hook: not run; the reply stops here")
            for call_id, reason in event.reasons.items():
                self._line(f"   {call_id}: {reason}")
            if self.resume:
                self._line(f"   resume it (its hook runs again) with: {self.resume}")

    def _result(self, event: ToolResultEvent) -> None:
        result = event.result
        mark = "<- " + (result.name or "tool") + (" (error)" if result.is_error else "")
        if result.name in RESULT_TOOLS:
            lines = result.output.splitlines() or [""]
            more = len(lines) - RESULT_LINES
            self._line(f"{mark}:")
            for line in lines[:RESULT_LINES]:
                self._line(f"   {line}")
            if more > 0:
                self._line(f"   ... ({more} more lines)")
        else:
            self._line(f"{mark}: {abbreviate(result.output, 100)}")

    def board(self, tasks: Sequence[Task]) -> None:
        counts = Counter(t.status.value for t in tasks)
        self.summary.tasks = dict(counts)
        shown = tuple(sorted(counts.items()))
        if shown == self._board:
            return
        self._board = shown
        if self.json:
            rows = [{"id": t.id, "title": t.title, "status": t.status.value, "owner": t.owner}
                    for t in tasks]  # fmt: skip
            print_json_line({"type": "board", "tasks": rows})
            return
        states = ", ".join(f"{c} {s}" for s, c in shown)
        working = [f"{t.owner}: {t.title}" for t in tasks if t.status.value == "in_progress"]
        self._aside(f"[team] tasks: {states}" + (f" ({'; '.join(working)})" if working else ""))

    def message(self, msg: TeamMessage) -> None:
        if self.json:
            data = msg.model_dump(mode="json", exclude={"schema_version"})
            print_json_line({"type": "team_message", **data})
            return
        to = "everyone" if msg.broadcast else msg.recipient
        self._aside(f"[team] {msg.sender} -> {to}: {abbreviate(msg.content, 100)}")

    def finish(self) -> None:
        if self.json:
            data: dict[str, Any] = asdict(self.summary)  # (asdict garbles a Counter)
            data["tool_calls"] = dict(self.summary.tool_calls)
            print_json_line({"type": "run_end", **data})
            return
        self._line("")
        for line in self.summary.lines():
            self._line(line)

    def end_line(self) -> None:
        """End a streamed line left open and print the board lines held for it."""
        if self._midline:
            print()
            self._midline = False
        held, self._held = self._held, []
        for text in held:
            print(terminal_safe(text), flush=True)

    def lines(self, texts: Sequence[str]) -> None:
        """Whole lines (the token table), each on its own line after any open streamed line."""
        for text in texts:
            self._line(text)

    def _stream(self, text: str) -> None:
        """Streamed text as it comes; held board lines go out where a line of it ends."""
        done, newline, rest = text.rpartition("\n")
        if newline:
            sys.stdout.write(done + newline)
            self._midline = False
            self.end_line()
        sys.stdout.write(rest)
        sys.stdout.flush()
        if rest:
            self._midline = True

    def _aside(self, text: str) -> None:
        """A board or team line: held while a streamed line is open, so it never cuts it."""
        if self._midline:
            self._held.append(text)
        else:
            self._line(text)

    def _line(self, text: str) -> None:
        self.end_line()
        print(terminal_safe(text), flush=True)  # names and content come from the store


def _args(values: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())
