"""Identity: the :class:`RuntimeContext` (org, user, session) that scopes every key, path and permission.

Identifiers are validated (1-256 characters, no control characters, no surrounding whitespace) and are
never spliced raw into keys or paths: :meth:`RuntimeContext.scope` gives typed segments (``o:``, ``u:``,
``s:``) whose anonymous forms (``o:``/``u:`` with nothing after the colon) no real identifier can produce.
Backends escape every segment again, so ``"../x"`` or ``"a:b"`` can neither collide nor escape.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import unicodedata
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Generic, ParamSpec, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_serializer, field_validator

MAX_ID_LENGTH = 256


def undecodable(text: str) -> tuple[int, int] | None:
    """``(byte, index)`` of the first byte of ``text`` that was not UTF-8 (Python keeps such a byte
    of a command line or file name as a lone surrogate, which no JSON or store can hold); None
    when it is all text."""
    for index, ch in enumerate(text):
        if "\udc80" <= ch <= "\udcff":
            return ord(ch) - 0xDC00, index
    return None


def validate_identifier(value: str, field: str) -> str:
    """Return ``value`` if it is a valid identifier, else raise ``ValueError`` naming ``field``."""
    if not isinstance(value, str):
        raise ValueError(f"{field} must be a string, got {type(value).__name__}")
    if not 1 <= len(value) <= MAX_ID_LENGTH:
        raise ValueError(f"{field} must be 1-{MAX_ID_LENGTH} characters long, got {len(value)}")
    if value != value.strip():
        raise ValueError(f"{field} {value!r} has leading or trailing whitespace; remove it")
    if value.isascii() and value.isprintable():  # no ASCII control character: the common case
        return value
    found = undecodable(value)
    if found is not None:
        raise ValueError(
            f"{field} {value!r} holds the byte {found[0]:#04x}, which is not UTF-8; "
            "write the id in UTF-8"
        )
    for ch in value:
        if unicodedata.category(ch) in ("Cc", "Cs"):
            raise ValueError(
                f"{field} {value!r} contains the control character U+{ord(ch):04X}; remove it"
            )
    return value


def fit_identifier(value: str) -> str:
    """An id built from other ids (``team-<team>-<member>``), kept within :data:`MAX_ID_LENGTH`:
    ``value`` itself when short enough, else its head, ``#`` and 128 bits of its SHA-256."""
    if len(value) <= MAX_ID_LENGTH:
        return value
    digest = hashlib.sha256(value.encode()).hexdigest()[:32]
    return f"{value[: MAX_ID_LENGTH - 33]}#{digest}"


def org_segment(org_id: str | None) -> str:
    """Typed key segment for an org; ``"o:"`` means no tenant."""
    return "o:" if org_id is None else "o:" + validate_identifier(org_id, "org_id")


def user_segment(user_id: str | None) -> str:
    """Typed key segment for a user; ``"u:"`` means anonymous."""
    return "u:" if user_id is None else "u:" + validate_identifier(user_id, "user_id")


def session_segment(session_id: str) -> str:
    """Typed key segment for a session."""
    return "s:" + validate_identifier(session_id, "session_id")


class RuntimeContext(BaseModel):
    """Who is calling: immutable, one per call, flowing through tools and stores via :func:`current_context`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    user_id: str | None = None
    org_id: str | None = None
    metadata: Mapping[str, str] = Field(default_factory=lambda: MappingProxyType({}))

    @field_validator("session_id")
    @classmethod
    def _check_session(cls, v: str) -> str:
        return validate_identifier(v, "session_id")

    @field_validator("user_id", "org_id")
    @classmethod
    def _check_optional(cls, v: str | None, info: Any) -> str | None:
        return None if v is None else validate_identifier(v, info.field_name)

    @field_validator("metadata", mode="after")
    @classmethod
    def _freeze_metadata(cls, v: Mapping[str, str]) -> Mapping[str, str]:
        return MappingProxyType(dict(v))  # pydantic has checked the str keys and values

    @field_serializer("metadata")
    def _dump_metadata(self, v: Mapping[str, str]) -> dict[str, str]:
        return dict(v)

    def scope(self) -> tuple[str, str, str]:
        """The typed (org, user, session) key segments of this context."""
        return (
            org_segment(self.org_id),
            user_segment(self.user_id),
            session_segment(self.session_id),
        )

    def owner_scope(self) -> tuple[str, str]:
        """The typed (org, user) key segments: what a user owns across sessions."""
        return (org_segment(self.org_id), user_segment(self.user_id))

    def with_session(self, session_id: str) -> RuntimeContext:
        """A copy of this context addressing another session of the same user."""
        return self.model_copy(update={"session_id": validate_identifier(session_id, "session_id")})

    def __hash__(self) -> int:
        return hash((self.session_id, self.user_id, self.org_id))


T = TypeVar("T")
P = ParamSpec("P")
R = TypeVar("R")
_current: contextvars.ContextVar[RuntimeContext | None] = contextvars.ContextVar(
    "agentscope_teams_runtime_context", default=None
)


def current_context() -> RuntimeContext:
    """The RuntimeContext of the running call; raises ``LookupError`` outside of one."""
    ctx = _current.get()
    if ctx is None:
        raise LookupError(
            "no RuntimeContext is active; call through HarnessAgent or wrap the code in use_context(ctx)"
        )
    return ctx


def get_context() -> RuntimeContext | None:
    """The RuntimeContext of the running call, or None."""
    return _current.get()


def use_context(ctx: RuntimeContext) -> VarScope[RuntimeContext]:
    """Make ``ctx`` the current context inside the ``with`` block (or the decorated function)."""
    return VarScope(_current, ctx)


class VarScope(Generic[T]):
    """A context variable set to ``value`` on entry and reset on exit: what :func:`use_context`
    and ``use_tool_env`` return. A small slotted class, not a ``@contextmanager`` generator (a
    generator, its frame and the manager's ``__dict__``): every call enters one and holds it
    while in flight. Used as a decorator, it sets the variable around each call of a (sync)
    function, each call with a scope of its own."""

    __slots__ = ("_token", "_var", "value")

    def __init__(self, var: contextvars.ContextVar[T | None], value: T) -> None:
        self._var, self.value = var, value
        self._token: contextvars.Token[T | None] | None = None

    def __enter__(self) -> T:
        if self._token is not None:
            raise RuntimeError(
                f"this scope of {self._var.name} is already entered; make a new one for each block"
            )
        self._token = self._var.set(self.value)
        return self.value

    def __exit__(self, et: object, e: object, tb: object) -> None:
        token, self._token = self._token, None
        if token is not None:
            self._var.reset(token)

    def __call__(self, func: Callable[P, R]) -> Callable[P, R]:
        var, value = self._var, self.value

        @functools.wraps(func)
        def scoped(*args: P.args, **kwargs: P.kwargs) -> R:
            with VarScope(var, value):
                return func(*args, **kwargs)

        return scoped
