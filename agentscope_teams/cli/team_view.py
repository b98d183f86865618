"""Rich renderables for Agent Teams: teams, members, the task board and mailbox messages."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..teams import Task, TaskStatus, Team, TeamMessage
from .common import abbreviate
from .safe_text import terminal_safe as safe
from .session_view import timestamp

STATUS_STYLES = {
    TaskStatus.PENDING: "yellow",
    TaskStatus.IN_PROGRESS: "blue",
    TaskStatus.COMPLETED: "green",
    TaskStatus.FAILED: "red",
    TaskStatus.CANCELLED: "dim",
}
_RESULT_WIDTH = 100


def teams_table(teams: Sequence[Team], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("team id", overflow="fold")
    table.add_column("name", style="bold", overflow="fold")
    table.add_column("status")
    table.add_column("lead")
    table.add_column("members", overflow="fold")
    table.add_column("created_at (UTC)", no_wrap=True)
    table.add_column("ended_at (UTC)", no_wrap=True)
    for team in teams:
        table.add_row(
            safe(team.id),
            safe(team.name),
            team.status.value,
            safe(team.lead),
            ", ".join(safe(m.name) for m in team.members) or "-",
            timestamp(team.created_at),
            timestamp(team.ended_at),
        )
    return table


def task_counts(tasks: Sequence[Task]) -> Text:
    """``3 tasks: 1 pending, 2 completed`` with each status in its colour."""
    counts = Counter(task.status for task in tasks)
    text = Text(f"{len(tasks)} task{'' if len(tasks) == 1 else 's'}")
    shown = [(status, counts[status]) for status in TaskStatus if counts[status]]
    for i, (status, count) in enumerate(shown):
        text.append(": " if i == 0 else ", ")
        text.append(f"{count} {status.value}", style=STATUS_STYLES[status])
    return text


def team_detail(team: Team, tasks: Sequence[Task]) -> Group:
    """The team header, its members and a count of its tasks by status."""
    header = Text.assemble(("team ", "dim"), (safe(team.name), "bold"), f"  {safe(team.id)}")
    header.append(
        f"\nstatus {team.status.value} · lead {safe(team.lead)} · {len(team.members)} member(s) · "
        f"created {timestamp(team.created_at)}"
        + (f" · ended {timestamp(team.ended_at)}" if team.ended_at else "")
        + " (UTC)",
        style="dim",
    )
    members = Table(title="Members", title_justify="left")
    for column in ("name", "spec", "status", "session id"):
        members.add_column(column, overflow="fold")
    members.add_row(safe(team.lead), "(lead)", "-", "-", style="dim")
    for m in team.members:
        status = m.status.value
        if m.stop is not None:  # a hook's continue: false: why, and that it holds
            status += f" by a {m.stop.event} hook: {m.stop.reason} (team resume)"
        members.add_row(safe(m.name), safe(m.spec or "-"), safe(status), safe(m.session_id))
    return Group(header, Text(), members, task_counts(tasks))


def _status_cell(task: Task) -> Text:
    cell = Text(task.status.value, style=STATUS_STYLES[task.status])
    if task.blocked_reason:
        cell.append(f"\n{task.blocked_reason}", style="yellow")
    return cell


def _outcome(task: Task) -> Text:
    if task.error:
        return Text(abbreviate(task.error, _RESULT_WIDTH), style="red")
    return Text(abbreviate(task.result or "", _RESULT_WIDTH))


def tasks_table(tasks: Sequence[Task], title: str) -> Table:
    table = Table(title=title, title_justify="left", show_lines=True)
    table.add_column("id", no_wrap=True)
    table.add_column("title", style="bold", overflow="fold")
    table.add_column("status", no_wrap=True)
    table.add_column("owner")
    table.add_column("assignee")
    table.add_column("blocked by", overflow="fold")
    table.add_column("attempts", justify="right")
    table.add_column("result", overflow="fold")
    for task in tasks:
        table.add_row(
            safe(task.id),
            safe(task.title),
            _status_cell(task),
            safe(task.owner or "-"),
            safe(task.assignee or "-"),
            ", ".join(safe(b) for b in task.blocked_by) or "-",
            f"{task.attempts}/{task.max_attempts}",
            _outcome(task),
        )
    return table


def messages_table(messages: Sequence[TeamMessage], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("sent_at (UTC)", no_wrap=True)
    table.add_column("seq", justify="right")
    table.add_column("from", style="bold")
    table.add_column("to")
    table.add_column("content", overflow="fold")
    for msg in messages:
        to = Text(safe(msg.recipient))
        if msg.broadcast:
            to.append(" (broadcast)", style="dim")
        table.add_row(timestamp(msg.sent_at), str(msg.seq), safe(msg.sender), to, msg.content)
    return table
