"""Conversion of a :class:`ModelRequest` to chat-completions messages and tools.

Tool results are moved next to the call they answer: whatever message holds a
:class:`ToolResultBlock`, it becomes a ``role: "tool"`` message right after the assistant message
that made the call. An assistant message that interleaves calls and results (a whole ReAct trace in
one ``Msg``) is split into one assistant message per step. A call with no recorded result gets a
placeholder result so the endpoint accepts the conversation; a result whose call is unknown is kept
as text in its own message.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..message import Block, DataBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock
from .base import ModelRequest, ResponseSchema, ToolSchema
from .tool_pairing import MISSING_RESULT, results_by_call, split_steps

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def to_openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The ``messages`` of a chat-completions request, system prompt first."""
    out: list[dict[str, Any]] = []
    if request.system_prompt:
        out.append({"role": "system", "content": request.system_prompt})
    called, results = results_by_call(request.messages)
    for msg in request.messages:
        if msg.role == "assistant":
            for step in split_steps(msg.blocks):
                out.append(_assistant_message(msg, step))
                out.extend(_tool_messages(step, results))
        else:
            message = _plain_message(msg, called)
            if message is not None:
                out.append(message)
    return out


def to_openai_tools(tools: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """The ``tools`` parameter: one function tool per schema."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def to_openai_response_format(schema: ResponseSchema) -> dict[str, Any]:
    """The ``response_format`` parameter asking for JSON matching ``schema`` (native structured
    output). The name is made safe for the endpoint (``[A-Za-z0-9_-]{1,64}``)."""
    spec: dict[str, Any] = {
        "name": _NAME_UNSAFE.sub("_", schema.name)[:64] or "output",
        "schema": schema.json_schema,
        "strict": schema.strict,
    }
    if schema.description:
        spec["description"] = schema.description
    return {"type": "json_schema", "json_schema": spec}


def _assistant_message(msg: Msg, step: list[Block]) -> dict[str, Any]:
    texts = [_block_text(b) for b in step if not isinstance(b, ToolUseBlock)]
    calls = [b for b in step if isinstance(b, ToolUseBlock)]
    message: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.input, ensure_ascii=False)},
            }
            for c in calls
        ]
    _add_name(message, msg)
    return message


def _tool_messages(
    step: list[Block], results: dict[str, list[ToolResultBlock]]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for call in (b for b in step if isinstance(b, ToolUseBlock)):
        found = results.pop(call.id, [])
        contents = [_result_text(r) for r in found] or [MISSING_RESULT]
        out.extend({"role": "tool", "tool_call_id": call.id, "content": c} for c in contents)
    return out


def _plain_message(msg: Msg, called: set[str]) -> dict[str, Any] | None:
    parts: list[dict[str, Any]] = []
    for block in msg.blocks:
        if isinstance(block, ToolResultBlock) and block.tool_use_id in called:
            continue
        if isinstance(block, DataBlock) and _is_image(block) and msg.role == "user":
            url = f"data:{block.media_type};base64,{block.data}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            parts.append({"type": "text", "text": _block_text(block)})
    if not parts:
        return None
    content: str | list[dict[str, Any]] = parts
    if all(p["type"] == "text" for p in parts):
        content = "\n".join(p["text"] for p in parts)
    message: dict[str, Any] = {"role": msg.role, "content": content}
    _add_name(message, msg)
    return message


def _block_text(block: Block) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, DataBlock):
        if _is_json(block) or not isinstance(block.data, str):
            return json.dumps(block.data, ensure_ascii=False, default=str)
        return f"[{block.media_type} data, {len(block.data)} characters]"
    if isinstance(block, ToolUseBlock):
        args = json.dumps(block.input, ensure_ascii=False)
        return f"[tool call {block.id}: {block.name}({args})]"
    return f"[result of tool call {block.tool_use_id}]: {_result_text(block)}"


def _result_text(result: ToolResultBlock) -> str:
    return f"Error: {result.output}" if result.is_error else result.output


def _is_json(block: DataBlock) -> bool:
    return block.media_type == "application/json" or block.media_type.endswith("+json")


def _is_image(block: DataBlock) -> bool:
    return block.media_type.startswith("image/") and isinstance(block.data, str)


def _add_name(message: dict[str, Any], msg: Msg) -> None:
    """Add ``name`` when it says more than the role; endpoints accept ``[A-Za-z0-9_-]{1,64}``."""
    name = _NAME_UNSAFE.sub("_", msg.name)[:64]
    if name.strip("_") and name != msg.role:
        message["name"] = name
