"""Messages and content blocks exchanged between users, agents, models and tools.

A :class:`Msg` is immutable: its fields cannot be assigned and its ``metadata`` is a
:class:`FrozenMetadata` (a ``dict`` that refuses changes). A change is a new message
(:meth:`Msg.with_metadata`, :meth:`Msg.with_output`, ``model_copy(update=...)``). Session storage
relies on it: a message's stored encoding is cached and reused for as long as the message object
lives (:mod:`agentscope_teams.sessions.segments`). Values nested inside ``metadata`` and block
payloads (``ToolUseBlock.input``, ``DataBlock.data``) belong to the message too: never change them.
"""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, NoReturn, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

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


class FrozenMetadata(dict[str, Any]):
    """A message's metadata: a ``dict`` (JSON, ``==``, reads) that refuses every change.

    Changing it raises ``TypeError`` saying to build a new message with :meth:`Msg.with_metadata`.
    """

    __slots__ = ()

    def _refuse(self, *_: Any, **__: Any) -> NoReturn:
        raise TypeError(
            "a message's metadata cannot be changed (a stored message's encoding is reused); "
            "build a new message with msg.with_metadata(key=value)"
        )

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[Any, ...]:  # pickle / copy build it whole, not item by item
        return (FrozenMetadata, (dict(self),))

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenMetadata:
        import copy

        return FrozenMetadata(copy.deepcopy(dict(self), memo))


Block = Annotated[
    TextBlock | ToolUseBlock | ToolResultBlock | DataBlock, Field(discriminator="type")
]
Role = Literal["user", "assistant", "system"]


class Msg(BaseModel):
    """One immutable message: ``content`` is a plain string or a list of blocks (module docs)."""

    model_config = ConfigDict(frozen=True)
    id: str = Field(default_factory=new_id)
    role: Role
    name: str
    content: str | list[Block]
    metadata: Annotated[dict[str, Any], AfterValidator(FrozenMetadata)] = Field(
        default_factory=FrozenMetadata
    )
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

    def with_metadata(self, **items: Any) -> Msg:
        """A copy of this message with ``items`` added to (or replacing keys of) its metadata."""
        msg = self.model_copy(update={"metadata": FrozenMetadata({**self.metadata, **items})})
        private = msg.__pydantic_private__
        if private is not None and _SEALED in private:  # the copy is not stored yet
            object.__setattr__(msg, "__pydantic_private__", _unsealed(private))
        return msg

    def with_output(self, value: Any, data: Any) -> Msg:
        """A copy of this message carrying a validated output: ``value`` for this process, ``data``
        (its JSON form) in ``metadata`` so it is saved with the message."""
        msg = self.with_metadata(**{OUTPUT_KEY: data})
        private = _unsealed(self.__pydantic_private__ or {})
        private[_OUTPUT_SLOT] = value
        object.__setattr__(msg, "__pydantic_private__", private)
        return msg

    def set_output(self, value: Any, data: Any) -> None:
        """Deprecated (messages are immutable): use ``msg = msg.with_output(value, data)``.

        Still attaches the output in place to a message that was never stored; a stored one
        raises ``TypeError`` (its cached encoding must stay true)."""
        warnings.warn(
            "Msg.set_output is deprecated: messages are immutable, use msg.with_output(value, data)",
            DeprecationWarning,
            stacklevel=2,
        )
        if is_sealed(self):
            raise TypeError(
                f"message {self.id} is stored in a session and cannot change; "
                "use msg.with_output(value, data), which returns a new message"
            )
        made = self.with_output(value, data)
        object.__setattr__(self, "metadata", made.metadata)
        object.__setattr__(self, "__pydantic_private__", made.__pydantic_private__)

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


_SEALED = "_sealed"


def seal(messages: Iterable[Msg]) -> None:
    """Mark messages whose encoding a session cache holds: even deprecated in-place changes
    (:meth:`Msg.set_output`) refuse them from then on."""
    for msg in messages:
        private = msg.__pydantic_private__
        if private is None:
            object.__setattr__(msg, "__pydantic_private__", {_SEALED: True})
        else:
            private[_SEALED] = True


def _unsealed(private: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in private.items() if k != _SEALED}


def is_sealed(msg: Msg) -> bool:
    """Whether :func:`seal` marked ``msg``."""
    private = msg.__pydantic_private__
    return private is not None and _SEALED in private


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
