"""Messages and content blocks exchanged between users, agents, models and tools."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

T = TypeVar("T")

#: ``Msg.metadata`` key of a reply's structured output (its JSON data).
OUTPUT_KEY = "output"
_OUTPUT_SLOT = "_output"
#: ``Msg.metadata`` key of a team member's wake-up message, ``{"own": [task ids], "free": [task
#: ids]}``: written by ``teams.work``, read by models that act on the task ids (scripted files).
TEAM_WAKE_KEY = "team_wake"


def new_id(prefix: str = "") -> str:
    """A fresh random identifier (uuid4 hex), optionally prefixed."""
    return prefix + uuid.uuid4().hex


def utcnow() -> datetime:
    return datetime.now(UTC)


class TextBlock(BaseModel):
    model_config = ConfigDict(frozen=True)
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(BaseModel):
    """A tool call requested by the model."""

    model_config = ConfigDict(frozen=True)
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any] = Field(default_factory=dict)


class ToolResultBlock(BaseModel):
    """The result of one tool call; ``is_error`` marks a failure the model should read and correct."""

    model_config = ConfigDict(frozen=True)
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    name: str = ""
    output: str
    is_error: bool = False
    #: The tool's structured result as JSON (see ``tools.output``), for code; models read ``output``.
    data: dict[str, Any] | None = None


class DataBlock(BaseModel):
    """Structured data (``media_type="application/json"``, ``data`` a JSON value) or media (base64 ``data``)."""

    model_config = ConfigDict(frozen=True)
    type: Literal["data"] = "data"
    media_type: str = "application/json"
    data: Any = None


Block = Annotated[
    TextBlock | ToolUseBlock | ToolResultBlock | DataBlock, Field(discriminator="type")
]
Role = Literal["user", "assistant", "system"]


class Msg(BaseModel):
    """One message: ``content`` is a plain string or a list of blocks."""

    id: str = Field(default_factory=new_id)
    role: Role
    name: str
    content: str | list[Block]
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
    # The validated output lives in ``__pydantic_private__`` (copied by ``model_copy``, pickled),
    # set only by :meth:`set_output`, and is not a declared private attribute: pydantic would then
    # run its Python-level private-attribute initializer for every message it builds or loads
    # (≈ 9% of a 50-message session round trip, ``python -m bench.profile session``).

    @property
    def _output(self) -> Any:
        private = self.__pydantic_private__
        return None if private is None else private.get(_OUTPUT_SLOT)

    @property
    def output(self) -> Any:
        """The structured output of a reply made with ``output_type=``: the validated value (a
        model instance, ...) in the process that validated it; for a message read back from the
        store, its JSON data (:meth:`output_as` validates it again). None without one."""
        if self._output is not None:
            return self._output
        return self.metadata.get(OUTPUT_KEY)

    def output_as(self, kind: type[T]) -> T:
        """The structured output as ``kind`` (typed): the validated value if it already is one,
        else its JSON data validated by pydantic. ``ValueError`` if the message has none."""
        if OUTPUT_KEY not in self.metadata:
            raise ValueError(
                f"message {self.id} has no structured output: its reply was not asked for one; "
                "pass output_type= to call() / stream() to get a validated value"
            )
        if self._output is not None and _is_instance(self._output, kind):
            return self._output  # type: ignore[no-any-return]
        return TypeAdapter(kind).validate_python(self.metadata[OUTPUT_KEY])

    def __eq__(self, other: object) -> bool:
        """Messages with equal fields are equal: the validated output value attached by
        :meth:`set_output` is the typed form of ``metadata["output"]`` and is not compared."""
        if not isinstance(other, Msg):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def set_output(self, value: Any, data: Any) -> None:
        """Attach a validated output: ``value`` for this process, ``data`` (its JSON form) in
        ``metadata`` so it is saved with the message."""
        private = dict(self.__pydantic_private__ or {})
        private[_OUTPUT_SLOT] = value
        object.__setattr__(self, "__pydantic_private__", private)
        self.metadata[OUTPUT_KEY] = data

    @property
    def blocks(self) -> list[Block]:
        """Content as blocks (a string becomes one TextBlock)."""
        if isinstance(self.content, str):
            return [TextBlock(text=self.content)] if self.content else []
        return list(self.content)

    def get_text_content(self) -> str:
        """All text of the message joined by newlines."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text for b in self.content if isinstance(b, TextBlock))

    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.blocks if isinstance(b, ToolUseBlock)]

    def tool_results(self) -> list[ToolResultBlock]:
        return [b for b in self.blocks if isinstance(b, ToolResultBlock)]


def _is_instance(value: Any, kind: Any) -> bool:
    try:
        return isinstance(value, kind)
    except TypeError:  # a generic alias such as list[int]: validate instead
        return False


def UserMsg(content: str | list[Block], name: str = "user", **kw: Any) -> Msg:
    """A message from the user."""
    return Msg(role="user", name=name, content=content, **kw)


def AssistantMsg(content: str | list[Block], name: str = "assistant", **kw: Any) -> Msg:
    """A message from an agent."""
    return Msg(role="assistant", name=name, content=content, **kw)


def SystemMsg(content: str | list[Block], name: str = "system", **kw: Any) -> Msg:
    """A system message."""
    return Msg(role="system", name=name, content=content, **kw)
