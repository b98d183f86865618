"""What every provider's response parser shares: lenient body validation, tool arguments, and the
content of a streamed response.

Tool arguments that are not a JSON object are kept under :data:`RAW_ARGUMENTS_KEY` for the tool
layer to report back to the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import ModelResponseError, first_problem
from ..message import TextBlock, ToolUseBlock

RAW_ARGUMENTS_KEY = "__raw_arguments__"

B = TypeVar("B", bound=BaseModel)


def validate_body(
    cls: type[B], data: object, *, expected: str, source: str, model: str, base_url: str | None
) -> B:
    """``data`` as ``cls``; else a :class:`ModelResponseError` saying the response is not
    ``expected`` (e.g. "a chat completion"), naming ``source`` and the first bad field."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise ModelResponseError(
            f"response is not {expected} ({source}): {first_problem(exc, 'body')}",
            model=model,
            base_url=base_url,
        ) from None


def parse_arguments(raw: str) -> dict[str, Any]:
    """Tool arguments as a dict; anything but a JSON object is kept raw under RAW_ARGUMENTS_KEY."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {RAW_ARGUMENTS_KEY: raw}


def streamed_content(
    text: list[str], calls: Iterable[ToolUseBlock]
) -> list[TextBlock | ToolUseBlock]:
    """The content of a streamed response: its text fragments joined, then its tool calls."""
    content: list[TextBlock | ToolUseBlock] = [TextBlock(text="".join(text))] if text else []
    content.extend(calls)
    return content
