"""What ``agentscope-teams review`` shows: a live task board (rich) or JSON lines (``--json``).

Both views get the same calls from the run: ``start``, every lead ``agent_event``, each new ``board``
snapshot, each team ``message``, and ``finish`` with the :class:`ReviewSummary`.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..agent.failures import BudgetOverrun
from ..events import AgentEvent, TextDeltaEvent, ToolCallEvent
from ..review import Severity
from ..teams import Task, TaskStatus, TeamMessage
from .common import abbreviate, print_json_line
from .review_budget import stop_line

OFFLINE_NOTE = "offline model: deterministic static analysis, not an LLM"


@dataclass
class ReviewSummary:
    """The outcome of one review run."""

    target: str
    model: str
    offline: bool
    output: Path
    seconds: float
    files: int
    tasks: int
    members: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    unfinished: list[str] = field(default_factory=list)
    team_id: str | None = None
    session_id: str = ""
    #: The budget that stopped the review before it finished (None: none did).
    budget_stop: BudgetOverrun | None = None

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def lines(self) -> list[str]:
        by_sev = ", ".join(f"{self.counts.get(s.value, 0)} {s.value}" for s in Severity)
        ended = "finished in" if self.budget_stop is None else "stopped after"
        lines = [
            f"review of {self.target} {ended} {self.seconds:.1f}s",
            f"findings: {self.total} ({by_sev})",
            f"files reviewed: {self.files} in {self.tasks} tasks by {len(self.members)} members "
            f"({', '.join(self.members) or '-'})",
        ]
        if self.unfinished:
            lines.append(f"unfinished tasks: {', '.join(self.unfinished)}")
        if self.budget_stop is not None:
            lines.append(stop_line(self.budget_stop))
        lines.append(f"report written to {self.output}")
        return lines


class ReviewView(Protocol):
    def start(self, target: str, model: str, offline: bool) -> None: ...
    def agent_event(self, event: AgentEvent) -> None: ...
    def board(self, tasks: Sequence[Task]) -> None: ...
    def message(self, msg: TeamMessage) -> None: ...
    def finish(self, summary: ReviewSummary) -> None: ...
    def close(self) -> None: ...


def _call_text(event: ToolCallEvent) -> str:
    call = event.tool_call
    args = ", ".join(f"{k}={v!r}" for k, v in call.input.items() if k != "description")
    return abbreviate(f"{call.name}({args})", 110)


def board_table(tasks: Sequence[Task]) -> Table:
    """Tasks per member: pending, in progress, done, failed, and what each is working on."""
    table = Table(title="Task board", title_justify="left")
    for column in ("member", "pending", "in progress", "done", "failed", "working on"):
        table.add_column(column, justify="right" if column in ("pending", "done") else "left")
    members = sorted({t.owner or t.assignee or "(anyone)" for t in tasks})
    for member in members:
        mine = [t for t in tasks if (t.owner or t.assignee or "(anyone)") == member]
        counts = Counter(t.status for t in mine)
        current = [t.id for t in mine if t.status is TaskStatus.IN_PROGRESS]
        table.add_row(
            member,
            str(counts[TaskStatus.PENDING]),
            Text(str(counts[TaskStatus.IN_PROGRESS]), style="blue"),
            Text(str(counts[TaskStatus.COMPLETED]), style="green"),
            Text(str(counts[TaskStatus.FAILED] + counts[TaskStatus.CANCELLED]), style="red"),
            ", ".join(current) or "-",
        )
    return table


class LiveView:
    """A rich Live task board; messages and lead actions scroll above it."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.print = functools.partial(console.print, soft_wrap=True)
        self.tasks: list[Task] = []
        self.status = "starting"
        self.live = Live(self._render(), console=console, refresh_per_second=8, transient=False)

    def _render(self) -> RenderableType:
        board: RenderableType = board_table(self.tasks) if self.tasks else Text("no tasks yet")
        return Group(board, Text(f"lead: {self.status}", style="dim"))

    def _update(self) -> None:
        self.live.update(self._render())

    def start(self, target: str, model: str, offline: bool) -> None:
        self.print(Text.assemble(("reviewing ", "bold"), target, f" with {model}"))
        if offline:
            self.print(Text(f"{OFFLINE_NOTE} (no API key and no --model)", style="yellow"))
        self.live.start()

    def agent_event(self, event: AgentEvent) -> None:
        if isinstance(event, ToolCallEvent):
            self.status = _call_text(event)
            if event.tool_call.name != "waitForTeam":
                self.print(Text(f"lead → {self.status}", style="cyan"))
            self._update()
        elif not isinstance(event, TextDeltaEvent):
            self.status = event.type.replace("_", " ")
            self._update()

    def board(self, tasks: Sequence[Task]) -> None:
        self.tasks = list(tasks)
        self._update()

    def message(self, msg: TeamMessage) -> None:
        first, *rest = msg.content.splitlines() or [""]
        more = f" (+{len(rest)} lines)" if rest else ""
        to = "everyone" if msg.broadcast else msg.recipient
        line = Text.assemble(("message ", "magenta"), f"{msg.sender} → {to}: ")
        line.append(abbreviate(first, 100) + more)
        self.print(line)

    def finish(self, summary: ReviewSummary) -> None:
        self.status = "done"
        self._update()
        self.live.stop()
        if not self.console.is_terminal:
            self.console.line()
        first = "bold green" if summary.budget_stop is None else "bold yellow"
        for i, line in enumerate(summary.lines()):
            self.print(Text(line, style=first if i == 0 else ""))
        if summary.offline:
            self.print(Text(OFFLINE_NOTE, style="yellow"))

    def close(self) -> None:
        if self.live.is_started:
            self.live.stop()
            if not self.console.is_terminal:
                self.console.line()


class JsonView:
    """One JSON object per line: lead agent events (without text deltas), board, messages."""

    def start(self, target: str, model: str, offline: bool) -> None:
        info: dict[str, Any] = {"type": "review_start", "target": target, "model": model}
        info |= {"offline": offline, "note": OFFLINE_NOTE if offline else "LLM"}
        print_json_line(info)

    def agent_event(self, event: AgentEvent) -> None:
        if not isinstance(event, TextDeltaEvent):
            print_json_line(event.model_dump(mode="json"))

    def board(self, tasks: Sequence[Task]) -> None:
        rows = [
            {"id": t.id, "title": t.title, "status": t.status.value, "owner": t.owner,
             "assignee": t.assignee}
            for t in tasks
        ]  # fmt: skip
        print_json_line({"type": "board", "tasks": rows})

    def message(self, msg: TeamMessage) -> None:
        data = msg.model_dump(mode="json", exclude={"schema_version"})
        print_json_line({"type": "team_message", **data})

    def finish(self, summary: ReviewSummary) -> None:
        stop = summary.budget_stop.model_dump() if summary.budget_stop is not None else None
        if stop is not None:
            print_json_line({"type": "budget_stop", **stop})
        data = {"type": "review_end", **asdict(summary), "total": summary.total}
        print_json_line(data | {"budget_stop": stop})

    def close(self) -> None:
        return None
