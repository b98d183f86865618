"""Conversion of a :class:`ModelRequest` to the Anthropic Messages API's ``messages`` and ``tools``.

The Messages API wants user and assistant turns to alternate and every ``tool_result`` in the user
turn right after the assistant turn that made the call. So, as for chat completions, tool results
are moved next to their call whatever message holds them; an assistant message that interleaves
calls and results is split into one assistant turn per step; a call with no recorded result gets a
placeholder error result; consecutive turns of the same role are merged. Base64 images in user
messages become ``image`` blocks; other data blocks become text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..message import Block, DataBlock, Msg, TextBlock, ToolResultBlock, ToolUseBlock
from .base import ModelRequest, ToolSchema
from .tool_pairing import MISSING_RESULT, results_by_call, split_steps

_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})


def to_anthropic_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """The ``messages`` of a Messages API request (the system prompt goes in ``system``)."""
    called, results = results_by_call(request.messages)
    turns: list[dict[str, Any]] = []
    for msg in request.messages:
        if msg.role == "assistant":
            for step in split_steps(msg.blocks):
                _append(turns, "assistant", [_assistant_block(b) for b in step])
                answers = _results_for(step, results)
                if answers:
                    _append(turns, "user", answers)
        else:
            _append(turns, "user", _user_blocks(msg, called))
    return turns


def to_anthropic_tools(tools: Sequence[ToolSchema]) -> list[dict[str, Any]]:
    """The ``tools`` parameter: name, description and ``input_schema`` per tool."""
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def _append(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Add ``blocks`` as a turn of ``role``, merged into the last turn if it has the same role."""
    if not blocks:
        return
    if turns and turns[-1]["role"] == role:
        if role == "user" and blocks[0]["type"] == "tool_result":
            turns[-1]["content"] = blocks + turns[-1]["content"]  # results lead a user turn
        else:
            turns[-1]["content"].extend(blocks)
        return
    turns.append({"role": role, "content": blocks})


def _assistant_block(block: Block) -> dict[str, Any]:
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    return {"type": "text", "text": _block_text(block) or " "}


def _results_for(
    step: list[Block], results: dict[str, list[ToolResultBlock]]
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for call in (b for b in step if isinstance(b, ToolUseBlock)):
        found = results.pop(call.id, [])
        if not found:
            out.append(_tool_result(call.id, MISSING_RESULT, is_error=True))
        out.extend(_tool_result(call.id, r.output, is_error=r.is_error) for r in found)
    return out


def _tool_result(call_id: str, output: str, *, is_error: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": output}
    if is_error:
        block["is_error"] = True
    return block


def _user_blocks(msg: Msg, called: set[str]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in msg.blocks:
        if isinstance(block, ToolResultBlock) and block.tool_use_id in called:
            continue
        if isinstance(block, DataBlock) and _is_image(block):
            source = {"type": "base64", "media_type": block.media_type, "data": block.data}
            blocks.append({"type": "image", "source": source})
        else:
            text = _block_text(block)
            if text:
                blocks.append({"type": "text", "text": text})
    return blocks


def _block_text(block: Block) -> str:
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, DataBlock):
        if not isinstance(block.data, str) or block.media_type.endswith("json"):
            return json.dumps(block.data, ensure_ascii=False, default=str)
        return f"[{block.media_type} data, {len(block.data)} characters]"
    if isinstance(block, ToolUseBlock):
        return f"[tool call {block.id}: {block.name}({json.dumps(block.input)})]"
    output = f"Error: {block.output}" if block.is_error else block.output
    return f"[result of tool call {block.tool_use_id}]: {output}"


def _is_image(block: DataBlock) -> bool:
    return block.media_type in _IMAGE_TYPES and isinstance(block.data, str)
