"""Token estimates where nothing better is known: a request's input before it is sent (to reserve
it), and a response's usage when the provider reported none (marked ``usage_estimated``).

The estimate errs high (3 characters a token, plus a few per message), so a reservation covers
what the provider will count in practice.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Sequence
from json.encoder import encode_basestring

from ..message import Msg
from ..model.base import ModelRequest, ModelResponse, ToolSchema

CHARS_PER_TOKEN = 3
PER_MESSAGE = 4
#: Tool schemas whose JSON length is kept (by identity; schemas are immutable).
SCHEMAS_KEPT = 4096
_SCHEMA_CHARS: dict[int, tuple[ToolSchema, int]] = {}
#: Messages whose content length is kept: a loop's every step sends the messages of the steps
#: before it, so each is measured once (by identity, held weakly; a message is immutable, and
#: one whose block list grew is measured again).
MESSAGES_KEPT = 65536
_MESSAGE_CHARS: dict[int, tuple[weakref.ref[Msg], int, int]] = {}
#: Plain ASCII text up to this long is measured at each request rather than kept (it costs less).
SHORT_TEXT = 256
#: ``{"content":`` and ``}`` around the JSON of a message's content (:func:`message_chars`).
_CONTENT_JSON = 12


def tokens(chars: int) -> int:
    """Tokens ``chars`` characters may count for."""
    return -(-chars // CHARS_PER_TOKEN)  # rounded up


def message_chars(msg: Msg) -> int:
    """The characters a message's content adds to a request: the length of its JSON (plain ASCII
    text: its JSON string, as pydantic writes it, without a call into pydantic)."""
    chars = _ascii_text_chars(msg.content)
    return chars if chars is not None else len(msg.model_dump_json(include={"content"}))


def _ascii_text_chars(content: object) -> int | None:
    """The JSON length of a message content that is plain ASCII text (None: other content)."""
    if content.__class__ is str and content.isascii():
        return len(encode_basestring(content)) + _CONTENT_JSON
    return None


def _kept_message_chars(msg: Msg) -> int:
    """:func:`message_chars`, kept per message object (:data:`MESSAGES_KEPT`) unless short text."""
    content = msg.content
    size = len(content)
    if size <= SHORT_TEXT and (short := _ascii_text_chars(content)) is not None:
        return short
    found = _MESSAGE_CHARS.get(id(msg))
    if found is not None and found[0]() is msg and found[1] == size:
        return found[2]
    chars = message_chars(msg)
    if len(_MESSAGE_CHARS) >= MESSAGES_KEPT:
        _MESSAGE_CHARS.clear()
    _MESSAGE_CHARS[id(msg)] = (weakref.ref(msg), size, chars)
    return chars


def tool_chars(tools: Sequence[ToolSchema]) -> int:
    """The characters tool schemas add to a request: the length of their JSON list."""
    if not tools:
        return 0
    return sum(map(_schema_chars, tools)) + 2 * len(tools)  # "[", "]" and each ", "


def _schema_chars(schema: ToolSchema) -> int:
    """The length of ``schema``'s JSON; kept per schema object (a toolkit builds its schemas once
    and every request of its agent carries the same ones)."""
    found = _SCHEMA_CHARS.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    chars = len(json.dumps(schema.model_dump()))
    if len(_SCHEMA_CHARS) >= SCHEMAS_KEPT:
        _SCHEMA_CHARS.clear()
    _SCHEMA_CHARS[id(schema)] = (schema, chars)
    return chars


def estimate_input(request: ModelRequest) -> int:
    """Tokens the request's prompt, messages and tool schemas may count for."""
    messages, tools = request.messages, request.tools
    chars = len(request.system_prompt) + sum(map(_kept_message_chars, messages))
    if tools:
        chars += tool_chars(tools)
    if request.response_schema is not None:
        chars += len(json.dumps(request.response_schema.json_schema))
    return tokens(chars) + PER_MESSAGE * (len(messages) + 1)


def estimate_output(response: ModelResponse) -> int:
    """Tokens the response's text and tool calls may count for."""
    return tokens(len(response.model_dump_json(include={"content"}))) + PER_MESSAGE


def output_tokens(response: ModelResponse) -> int:
    """The output tokens the provider counted for ``response``, else an estimate."""
    return response.usage.output_tokens or estimate_output(response)
