"""Context compression: summarize the oldest messages into ``state.summary`` and archive them.

The cut never separates a tool call from its result: only boundaries where every earlier tool call
already has its result are candidates. Removed messages go to an archive first, so nothing is lost.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from ..message import Block, Msg, TextBlock, ToolResultBlock, ToolUseBlock, UserMsg
from ..model.base import ChatModel, ModelRequest
from ..state import UsageLedger
from ..store.base import PATH_SEGMENT_MAX_BYTES, path_segment
from .config import CompressionConfig

Archiver = Callable[[list[Msg]], Awaitable[None]]

SUMMARY_PROMPT = (
    "You compress conversations. Write a concise summary of the conversation below that keeps every "
    "fact, decision, file name, identifier and open question needed to continue the work. "
    "Do not add commentary."
)


# Characters a block's JSON form adds around its strings: the estimate tracks the size the block
# takes in the stored state without serializing it (string escapes are not counted).
_TEXT_OVERHEAD = len('{"type":"text","text":""}')
_TOOL_USE_OVERHEAD = len('{"type":"tool_use","id":"","name":"","input":}')
_TOOL_RESULT_OVERHEAD = len(
    '{"type":"tool_result","tool_use_id":"","name":"","output":"","is_error":false}'
)


def text_tokens(text: str) -> float:
    """A tokenizer-free token estimate of ``text``: about 4 characters per token for ASCII, one
    token per wide character (CJK ideographs, kana, hangul and most symbols outside Latin scripts).

    Tokenizers of the models in use (Qwen, GPT-4o, DeepSeek) spend about one token per Chinese
    character, so counting characters / 4 undercounts Chinese about four times. Wide characters take
    three or four UTF-8 bytes, accented Latin letters two: ``(bytes - chars) / 2`` counts the wide
    ones (an accented letter counts half) without a per-character loop.
    """
    n = len(text)
    if text.isascii():
        return n / 4
    wide = (len(text.encode("utf-8", "surrogatepass")) - n) / 2
    return (n - wide) / 4 + wide


def _block_tokens(block: Block) -> float:
    if isinstance(block, TextBlock):
        return text_tokens(block.text) + _TEXT_OVERHEAD / 4
    if isinstance(block, ToolResultBlock):
        ids = len(block.tool_use_id) + len(block.name) + _TOOL_RESULT_OVERHEAD
        return text_tokens(block.output) + ids / 4
    if isinstance(block, ToolUseBlock):
        arguments = json.dumps(block.input, separators=(",", ":"), ensure_ascii=False, default=str)
        ids = len(block.id) + len(block.name) + _TOOL_USE_OVERHEAD
        return text_tokens(arguments) + ids / 4
    return text_tokens(block.model_dump_json())


def estimate_tokens(msg: Msg) -> int:
    """A tokenizer-free estimate of one message's tokens (:func:`text_tokens` over its JSON-sized
    content: ASCII at 4 characters per token, CJK at one token per character)."""
    if isinstance(msg.content, str):
        return int(text_tokens(msg.content)) + 4
    return int(sum(map(_block_tokens, msg.content))) + 4


class TokenCounter:
    """The size of a context in tokens: the size the model last reported (``state.usage``) plus an
    estimate of the messages after it, else :func:`estimate_tokens` summed over every message.

    Meant to live for one reply; estimates are cached per message, re-estimating only messages that
    changed. Entries keep the message and its content alive, so an ``id`` is never reused while
    cached; a message whose ``content`` was replaced or grew is re-estimated.
    """

    def __init__(self) -> None:
        self._cache: dict[int, tuple[Msg, object, int, int]] = {}

    def total(self, context: list[Msg], usage: UsageLedger | None = None) -> int:
        start = usage.anchor(context) if usage is not None else 0
        reported = usage.prompt_tokens if usage is not None and start else 0
        return reported + self._estimate(context, start)

    def _estimate(self, context: list[Msg], start: int) -> int:
        cache, total, seen = self._cache, 0, set()
        for msg in context[start:] if start else context:
            key = id(msg)
            seen.add(key)
            content = msg.content
            entry = cache.get(key)
            if entry is not None and entry[1] is content and entry[2] == len(content):
                total += entry[3]
                continue
            tokens = estimate_tokens(msg)
            cache[key] = (msg, content, len(content), tokens)
            total += tokens
        if len(cache) > len(seen):
            for key in [k for k in cache if k not in seen]:
                del cache[key]
        return total


def safe_boundaries(context: list[Msg]) -> list[int]:
    """Indices ``i`` where ``context[:i]`` holds no tool call whose result is in ``context[i:]``."""
    open_calls: set[str] = set()
    out = []
    for i, msg in enumerate(context):
        if not open_calls and i > 0:
            out.append(i)
        for b in msg.blocks:
            if isinstance(b, ToolResultBlock):
                open_calls.discard(b.tool_use_id)
        open_calls.update(u.id for u in msg.tool_uses())
    return out


def choose_split(context: list[Msg], keep_recent_tokens: int) -> int:
    """How many leading messages to remove (0 = none), keeping the newest ``keep_recent_tokens``."""
    kept, candidate = 0, len(context)
    while candidate > 0 and kept < keep_recent_tokens:
        candidate -= 1
        kept += estimate_tokens(context[candidate])
    candidate = min(candidate, len(context) - 1)
    safe = [i for i in safe_boundaries(context) if i <= candidate]
    return safe[-1] if safe else 0


def render_transcript(msgs: list[Msg]) -> str:
    lines = []
    for m in msgs:
        for b in m.blocks:
            if isinstance(b, TextBlock):
                lines.append(f"{m.role} {m.name}: {b.text}")
            else:
                lines.append(f"{m.role} {m.name}: {b.model_dump_json(exclude={'type'})}")
    return "\n".join(lines)


async def summarize(
    model: ChatModel, previous: str, removed: list[Msg], cfg: CompressionConfig
) -> str:
    """Ask the model for a summary of ``previous`` plus the removed messages, capped in size."""
    text = render_transcript(removed)
    if previous:
        text = f"Earlier summary:\n{previous}\n\nConversation since:\n{text}"
    request = ModelRequest(
        system_prompt=SUMMARY_PROMPT,
        messages=[UserMsg(text)],
        metadata={"purpose": "compression"},
    )
    response = await model.generate(request)
    summary = response.text.strip() or previous
    return summary[: cfg.summary_max_chars]


def file_archiver(path: Path) -> Archiver:
    """An archiver appending removed messages as JSON lines to ``path`` (off the event loop)."""

    async def archive(msgs: list[Msg]) -> None:
        data = "".join(json.dumps(m.model_dump(mode="json")) + "\n" for m in msgs)

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as fh:
                fh.write(data)
                fh.flush()

        await anyio.to_thread.run_sync(write)

    return archive


def workspace_archive_path(workspace: Path, agent: str, session_id: str) -> Path:
    """Where the default archiver keeps an agent's removed messages inside its workspace.

    The name holds two ids, each a :func:`~agentscope_teams.store.base.path_segment`; when both
    together are too long for one name, each gets half the budget (so the name stays under 255 bytes).
    """
    name = f"{path_segment(agent)}--{path_segment(session_id)}"
    if len(name.encode()) > PATH_SEGMENT_MAX_BYTES:
        half = PATH_SEGMENT_MAX_BYTES // 2
        name = f"{path_segment(agent, half)}--{path_segment(session_id, half)}"
    return workspace / ".agentscope" / "archive" / f"{name}.jsonl"
