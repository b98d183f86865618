"""Structured tool results: a tool returns data, :meth:`ToolOutput.render` makes the model's text.

A tool function may return a :class:`ToolOutput`. The toolkit renders it once into the
``ToolResultBlock.output`` the model reads, and keeps its fields as JSON in ``ToolResultBlock.data``
for code (a CLI, a transcript, a scripted model): :func:`output_of` reads them back as the model.
Nothing needs to parse the text.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from ..message import ToolResultBlock

OutputT = TypeVar("OutputT", bound="ToolOutput")


class ToolOutput(BaseModel):
    """Base of structured tool results; subclasses declare fields and :meth:`render`."""

    model_config = ConfigDict(frozen=True)

    def render(self) -> str:
        """The text the model reads."""
        raise NotImplementedError(f"{type(self).__name__} must define render()")

    def data(self) -> dict[str, Any]:
        """The fields as JSON values (what ``ToolResultBlock.data`` holds)."""
        return self.model_dump(mode="json")


def output_of(block: ToolResultBlock, kind: type[OutputT]) -> OutputT | None:
    """The structured result of ``block`` as ``kind``, or None (an error, or a text-only result)."""
    if block.is_error or block.data is None:
        return None
    return kind.model_validate(block.data)
