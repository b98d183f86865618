"""Token estimates where nothing better is known: a request's input before it is sent (to reserve
it), and a response's usage when the provider reported none (marked ``usage_estimated``).

The estimate errs high (3 characters a token, plus a few per message), so a reservation covers
what the provider will count in practice.
"""

from __future__ import annotations

import json
import math

from ..model.base import ModelRequest, ModelResponse

CHARS_PER_TOKEN = 3
PER_MESSAGE = 4


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


def estimate_input(request: ModelRequest) -> int:
    """Tokens the request's prompt, messages and tool schemas may count for."""
    chars = len(request.system_prompt)
    for msg in request.messages:
        chars += len(msg.model_dump_json(include={"content"}))
    if request.tools:
        chars += len(json.dumps([t.model_dump() for t in request.tools]))
    if request.response_schema is not None:
        chars += len(json.dumps(request.response_schema.json_schema))
    return _tokens(chars) + PER_MESSAGE * (len(request.messages) + 1)


def estimate_output(response: ModelResponse) -> int:
    """Tokens the response's text and tool calls may count for."""
    return _tokens(len(response.model_dump_json(include={"content"}))) + PER_MESSAGE
