"""Rich renderables for sessions: the ``sessions list`` table and a conversation for ``show``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ..message import Block, DataBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock
from ..sessions import SessionRecord
from ..tools.plan import render_todos
from .common import abbreviate
from .safe_text import terminal_safe as safe

_ROLE_STYLES = {"user": "bold cyan", "assistant": "bold green", "system": "bold magenta"}
_ARGS_WIDTH = 100
_OUTPUT_WIDTH = 160


def timestamp(value: datetime | None) -> str:
    """``2024-05-01 12:00:00`` in UTC (the store's clock), or ``-``."""
    return "-" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def session_summary(record: SessionRecord) -> dict[str, Any]:
    """One ``sessions list --json`` line: ids, counts and timestamps, not the conversation."""
    return {
        "org_id": record.org_id,
        "user_id": record.user_id,
        "agent_id": record.agent_id,
        "session_id": record.session_id,
        "messages": len(record.state.context),
        "version": record.version,
        "source": record.source.value,
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
    }


def sessions_table(records: Sequence[SessionRecord], title: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("agent", style="bold", overflow="fold")
    table.add_column("session id", overflow="fold")
    table.add_column("messages", justify="right")
    table.add_column("version", justify="right")
    table.add_column("updated_at (UTC)", no_wrap=True)
    table.add_column("source")
    for r in records:
        table.add_row(
            safe(r.agent_id),
            safe(r.session_id),
            str(len(r.state.context)),
            str(r.version),
            timestamp(r.updated_at),
            r.source.value,
        )
    return table


def _deferred(record: SessionRecord) -> list[Any]:
    """The session's deferred calls, with their reasons (the agent package imported only then: a
    CLI command does not load the agents)."""
    if not record.state.deferred_tool_calls:
        return []
    from ..agent.deferral import deferred_calls

    return list(deferred_calls(record.state))


def _header(record: SessionRecord) -> Text:
    owner = record.user_id if record.user_id is not None else "(anonymous)"
    text = Text.assemble(
        ("session ", "dim"),
        (safe(record.session_id), "bold"),
        ("  agent ", "dim"),
        (safe(record.agent_id), "bold"),
        ("  user ", "dim"),
        safe(owner),
    )
    if record.org_id is not None:
        text.append("  org ", "dim").append(safe(record.org_id))
    text.append(
        f"\nversion {record.version} · source {record.source.value} · "
        f"{len(record.state.context)} message(s)\ncreated {timestamp(record.created_at)} · "
        f"updated {timestamp(record.updated_at)} (UTC)",
        style="dim",
    )
    if record.config.model:
        text.append(f"\nmodel {safe(record.config.model)}", style="dim")
    waiting = record.state.awaiting_confirmation
    if waiting:
        text.append(
            f"\npaused: waiting for the user to confirm {len(waiting)} tool call(s)", "yellow"
        )
    deferred = _deferred(record)
    if deferred:
        text.append(
            f"\nstopped: a PreToolUse hook deferred {len(deferred)} tool call(s); the next call "
            "on this session runs its hook again",
            "yellow",
        )
        for call in deferred:
            text.append(f"\n  || {safe(call.summary(_ARGS_WIDTH))}", "yellow")
    return text


def _block(block: Block) -> Text:
    if isinstance(block, TextBlock):
        return Text(block.text)
    if isinstance(block, ToolUseBlock):
        args = abbreviate(json.dumps(block.input, ensure_ascii=False, default=str), _ARGS_WIDTH)
        return Text.assemble(("→ ", "blue"), (safe(block.name), "bold blue"), f"({args})")
    if isinstance(block, ToolResultBlock):
        label = safe(block.name or block.tool_use_id)
        style = "red" if block.is_error else "blue"
        mark = "✗ error from " if block.is_error else "← "
        return Text.assemble(
            (mark, style), (label, f"bold {style}"), ": ", abbreviate(block.output, _OUTPUT_WIDTH)
        )
    return _data(block)


def _data(block: DataBlock) -> Text:
    if block.media_type == "application/json":
        shown = abbreviate(json.dumps(block.data, ensure_ascii=False, default=str), _ARGS_WIDTH)
    else:
        shown = f"{len(str(block.data or ''))} characters of base64"
    return Text.assemble(("[data ", "dim"), (block.media_type, "dim"), ("] ", "dim"), shown)


def _message(msg: Msg) -> RenderableType:
    head = Text.assemble(
        (msg.role, _ROLE_STYLES.get(msg.role, "bold")),
        " ",
        (safe(msg.name), "bold"),
        ("  " + timestamp(msg.created_at), "dim"),
    )
    blocks: Iterable[Text] = [_block(b) for b in msg.blocks] or [Text("(empty)", style="dim")]
    return Group(head, Padding(Group(*blocks), (0, 0, 0, 2), expand=False))


def conversation(record: SessionRecord) -> Group:
    """The session header, its summary and task list (if any) and every message with abbreviated
    tool calls."""
    parts: list[RenderableType] = [_header(record), Text()]
    if record.state.summary:
        parts += [
            Panel(Text(record.state.summary), title="summary", title_align="left", expand=False),
            Text(),
        ]
    if record.state.tasks_context.tasks:
        plan = render_todos(record.state.tasks_context.tasks)
        parts += [Panel(Text(plan), title="task list", title_align="left", expand=False), Text()]
    if not record.state.context:
        parts.append(Text("(no messages)", style="dim"))
    for msg in record.state.context:
        parts += [_message(msg), Text()]
    return Group(*parts)
