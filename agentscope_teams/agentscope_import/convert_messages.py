"""AgentScope 2.0 messages -> this project's messages.

AgentScope keeps a whole reply in one assistant message: text, ``tool_call`` blocks and their
``tool_result`` blocks interleaved. Here a tool call is a ``tool_use`` block of an assistant message
and its results come back in the next message (role ``user``, name ``tool``). So one AgentScope
message becomes several: the run of blocks before the first results (assistant), the results
(tool), the next run, and so on. The last segment in the message's own role keeps the message id
(AgentScope's reply id); the others get ``<id>-<n>``, so converting twice gives the same ids.
Thinking blocks are kept in the segment's ``metadata["agentscope_thinking"]``; a hint block (fed to
AgentScope's model as a user message) becomes a user message of its own.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ..errors import CannotConvert as CannotConvert  # re-exported: its home before errors.py
from ..message import Block, DataBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock

_ERROR_STATES = {"error", "denied", "interrupted"}
_MSG_EXTRAS = ("usage", "finished_at", "finished_reason", "structured_output", "error")


def timestamp(value: Any, what: str) -> datetime:
    """An AgentScope timestamp (ISO text, local time when naive) as an aware UTC datetime."""
    if isinstance(value, datetime):
        found = value
    elif isinstance(value, str) and value:
        try:
            found = datetime.fromisoformat(value)
        except ValueError as exc:
            raise CannotConvert(f"{what} {value!r} is not an ISO timestamp") from exc
    else:
        raise CannotConvert(f"{what} is missing")
    return (found if found.tzinfo else found.astimezone()).astimezone(UTC)


def text_of(parts: Any, what: str) -> str:
    """A string, or the text of a list of text blocks; data blocks cannot become text."""
    if isinstance(parts, str):
        return parts
    texts = []
    for part in parts or []:
        if part.get("type") != "text":
            raise CannotConvert(f"{what} holds a {part.get('type')!r} block, only text converts")
        texts.append(part.get("text", ""))
    return "\n".join(texts)


def tool_input(block: dict[str, Any]) -> dict[str, Any]:
    raw = block.get("input") or "{}"
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        raise CannotConvert(
            f"tool call {block.get('id')!r} ({block.get('name')}) has input that is not JSON: "
            f"{str(raw)[:80]!r}"
        ) from exc
    if not isinstance(value, dict):
        raise CannotConvert(
            f"tool call {block.get('id')!r} ({block.get('name')}) has input that is not a JSON "
            "object"
        )
    return value


def _data(block: dict[str, Any]) -> DataBlock:
    source = block.get("source") or {}
    if source.get("type") != "base64":
        raise CannotConvert(
            f"data block {block.get('id')!r} refers to media by URL ({source.get('url')}); "
            "only inline (base64) media converts"
        )
    return DataBlock(
        media_type=source.get("media_type", "application/octet-stream"), data=source["data"]
    )


def _result(block: dict[str, Any]) -> ToolResultBlock:
    state = block.get("state", "running")
    call = f"tool result {block.get('id')!r} ({block.get('name')})"
    if state == "running":
        raise CannotConvert(f"{call} is still running; finish the reply in AgentScope first")
    return ToolResultBlock(
        tool_use_id=block["id"],
        name=block.get("name", ""),
        output=text_of(block.get("output", ""), call),
        is_error=state in _ERROR_STATES,
    )


class _Splitter:
    """Cuts one AgentScope message into this project's messages."""

    def __init__(self, msg: dict[str, Any]) -> None:
        self.msg = msg
        self.created_at = timestamp(msg.get("created_at"), f"message {msg.get('id')!r} created_at")
        self.out: list[
            tuple[str, str, list[Block], dict[str, Any]]
        ] = []  # role, name, blocks, meta
        self.run: list[Block] = []
        self.thinking: list[dict[str, Any]] = []
        self.results: list[Block] = []
        self.asking: list[str] = []

    def _flush_run(self) -> None:
        if self.run or self.thinking:
            meta = {"agentscope_thinking": self.thinking} if self.thinking else {}
            self.out.append((self.msg["role"], self.msg["name"], self.run, meta))
        self.run, self.thinking = [], []

    def _flush_results(self) -> None:
        if self.results:
            self.out.append(("user", "tool", self.results, {}))
        self.results = []

    def feed(self, block: dict[str, Any]) -> None:
        kind = block.get("type")
        if kind == "tool_result":
            self._flush_run()
            self.results.append(_result(block))
            return
        self._flush_results()
        if kind == "text":
            self.run.append(TextBlock(text=block.get("text", "")))
        elif kind == "thinking":
            self.thinking.append(block)
        elif kind == "data":
            self.run.append(_data(block))
        elif kind == "tool_call":
            self.run.append(
                ToolUseBlock(id=block["id"], name=block["name"], input=tool_input(block))
            )
            if block.get("state") == "asking":
                self.asking.append(block["id"])
        elif kind == "hint":
            self._flush_run()
            hint = text_of(block.get("hint", ""), f"hint block {block.get('id')!r}")
            meta = {"agentscope_block": "hint"}
            self.out.append(("user", block.get("source") or "hint", [TextBlock(text=hint)], meta))
        else:
            raise CannotConvert(
                f"message {self.msg.get('id')!r} has an unknown block type {kind!r}"
            )

    def messages(self) -> list[Msg]:
        self._flush_run()
        self._flush_results()
        if not self.out:  # an empty message stays a message
            self.out.append((self.msg["role"], self.msg["name"], [], {}))
        own = self.msg["id"]
        keeper = max(
            (i for i, seg in enumerate(self.out) if seg[0] == self.msg["role"]), default=-1
        )
        extras = {k: self.msg[k] for k in _MSG_EXTRAS if self.msg.get(k) is not None}
        result = []
        for i, (role, name, blocks, meta) in enumerate(self.out):
            metadata = {**(self.msg.get("metadata") or {}), **meta}
            if i == keeper:
                metadata.update({f"agentscope_{k}": v for k, v in extras.items()})
            else:
                metadata["agentscope_msg_id"] = own
            result.append(
                Msg(
                    id=own if i == keeper else f"{own}-{i}",
                    role=role,
                    name=name,
                    content=blocks,
                    metadata=metadata,
                    created_at=self.created_at,
                )
            )
        return result


def _blocks(message: dict[str, Any]) -> list[Any]:
    """A message's content blocks; a plain-text content (AgentScope allows a string) has none."""
    content = message.get("content")
    return content if isinstance(content, list) else []


def unanswered_submitted(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls waiting for an external execution result (AgentScope's ``submitted`` state)."""
    answered = {b.get("id") for m in messages for b in _blocks(m) if b.get("type") == "tool_result"}
    return [
        b
        for m in messages
        for b in _blocks(m)
        if b.get("type") == "tool_call"
        and b.get("state") == "submitted"
        and b["id"] not in answered
    ]


def convert_context(messages: list[dict[str, Any]]) -> tuple[list[Msg], list[str]]:
    """The converted messages and the ids of tool calls that wait for the user's confirmation."""
    waiting = unanswered_submitted(messages)
    if waiting:
        call = waiting[0]
        raise CannotConvert(
            f"tool call {call['id']!r} ({call.get('name')}) waits for an external execution result "
            "(state 'submitted'); this project runs tools itself. Deliver the result in AgentScope "
            "first"
        )
    out: list[Msg] = []
    asking: list[str] = []
    for raw in messages:
        if raw.get("role") not in ("user", "assistant", "system") or not raw.get("id"):
            raise CannotConvert(f"message {raw.get('id')!r} has no id or an unknown role")
        content = raw.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        splitter = _Splitter({**raw, "name": raw.get("name", raw["role"])})
        for block in content or []:
            splitter.feed(block)
        out.extend(splitter.messages())
        asking.extend(splitter.asking)
    return out, asking
