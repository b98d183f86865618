"""Bounds of what the task board, the mailbox and the team records accept: the one home of each limit.

Every value a caller hands the board or the mailbox (a model's tool call, the control plane, a
script) is checked here before anything is written. A number or a size out of bounds raises
:class:`~agentscope_teams.errors.LimitError` naming the field and the limit; a text with control
characters raises ``ValueError`` naming the field. Both are ``ValueError``: a model gets a tool error
it can correct, the control plane answers 422. Constructors (``LocalTeamClient``, the team
extensions, ``WorkerConfig``) check their defaults with :func:`config_lease` and raise
:class:`~agentscope_teams.errors.ConfigurationError` instead.

=====================================  ======================================================
what                                   bounds
=====================================  ======================================================
``lease_seconds`` (``task_lease``)     a finite number, ``0 < s <= MAX_TASK_LEASE`` (7 days):
                                       claims, renewals and new tasks; longer work renews
``max_attempts``                       an int, ``1 <= n <= MAX_ATTEMPTS`` (100)
``blocked_by``                         at most ``MAX_BLOCKERS`` (100) ids, each an identifier
``title``                              1 to ``MAX_TITLE`` (500) characters on one line
``result_schema``, result ``data``     a JSON schema within ``RESULT_SCHEMA_LIMITS`` (see
                                       ``docs/security.md``) / any JSON value, at most
                                       ``MAX_TEXT`` characters as JSON; the data is checked
                                       off the event loop in at most 2 s
``description``, ``result``,           at most ``MAX_TEXT`` (100,000) characters; newlines and
``error``, ``reason``, ``content``     tabs are fine, other control characters are not
team, lead, member and spec names,     identifiers (1-256 characters, no control characters
the task id a call names               (NUL included), no lone surrogates, no leading or
                                       trailing whitespace)
a read of an inbox                     ``1 <= limit <= MAX_READ`` (1000) messages
``timeout`` of a wait                  a finite number ``>= 0``
=====================================  ======================================================

Records are not re-checked when they are read: a record written before a bound existed still loads
(a stored lease over the bound is refused when it would be renewed, see :func:`lease`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from ...context import validate_identifier
from ...errors import ConfigurationError, InvalidSchema, LimitError
from ...schema_guard import SchemaLimits, accept

MAX_TASK_LEASE = 7 * 24 * 3600.0
MAX_ATTEMPTS = 100
MAX_BLOCKERS = 100
MAX_TITLE = 500
MAX_TEXT = 100_000
MAX_READ = 1000
#: The bounds of a task's ``result_schema`` and of the data checked against it
#: (:mod:`agentscope_teams.schema_guard`); replace it to change them, e.g.
#: ``limits.RESULT_SCHEMA_LIMITS = SchemaLimits(check_seconds=5)``.
RESULT_SCHEMA_LIMITS = SchemaLimits(max_schema_chars=MAX_TEXT, max_instance_chars=MAX_TEXT)

#: Control characters (Unicode category Cc) and lone surrogates (Cs), as ``validate_identifier``.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_BUT_BREAKS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def _number(value: object) -> float | None:
    """``value`` as a float when it is an int or a float (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return float(value)
    except OverflowError:  # an int too large for a float
        return math.inf


def lease(value: object, field: str = "lease_seconds") -> float:
    """``value`` as a task lease in seconds, or :class:`LimitError`."""
    seconds = _number(value)
    if seconds is None or not 0 < seconds <= MAX_TASK_LEASE:  # NaN fails both comparisons
        raise LimitError(
            field,
            MAX_TASK_LEASE,
            f"{field} must be a number of seconds > 0 and at most {MAX_TASK_LEASE:g} (7 days), "
            f"got {_shown(value)}; renew the lease to keep a task longer",
        )
    return seconds


def json_size(value: object, field: str) -> object:
    """``value`` if its JSON text is at most ``MAX_TEXT`` characters, else :class:`LimitError`."""
    try:
        size = len(json.dumps(value))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{field} must be JSON data: {exc}") from None
    if size > MAX_TEXT:
        raise LimitError(
            field, MAX_TEXT, f"{field} is {size} characters as JSON, over the limit of {MAX_TEXT}"
        )
    return value


def result_schema(value: object) -> dict[str, Any] | None:
    """A task's ``result_schema``: None, or a JSON schema that
    :func:`~agentscope_teams.schema_guard.accept` accepts within :data:`RESULT_SCHEMA_LIMITS`
    (:class:`~agentscope_teams.errors.InvalidSchema`, a ``ValueError``, names what is wrong)."""
    if value is None:
        return None
    json_size(value, "result_schema")
    try:
        return accept(value, RESULT_SCHEMA_LIMITS)
    except InvalidSchema as exc:
        raise InvalidSchema(f"result_schema is {exc}", exc.path) from None


def config_lease(value: object, field: str = "task_lease") -> float:
    """:func:`lease` for a constructor's default: :class:`ConfigurationError` when out of bounds."""
    try:
        return lease(value, field)
    except LimitError as exc:
        raise ConfigurationError(str(exc)) from None


def config_seconds(value: object, field: str, *, allow_zero: bool = False) -> float:
    """A constructor's duration (poll interval, member lease TTL, idle release): a finite number of
    seconds, ``> 0`` (``>= 0`` with ``allow_zero``) and at most :data:`MAX_TASK_LEASE`, else
    :class:`ConfigurationError`."""
    seconds = _number(value)
    low_ok = seconds is not None and (seconds >= 0 if allow_zero else seconds > 0)
    if seconds is None or not (low_ok and seconds <= MAX_TASK_LEASE):
        least = ">= 0" if allow_zero else "> 0"
        raise ConfigurationError(
            f"{field} must be a number of seconds {least} and at most {MAX_TASK_LEASE:g} "
            f"(7 days), got {_shown(value)}"
        )
    return seconds


def attempts(value: object, field: str = "max_attempts") -> int:
    """``value`` as a number of attempts, or :class:`LimitError`."""
    if not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_ATTEMPTS):
        raise LimitError(
            field,
            MAX_ATTEMPTS,
            f"{field} must be a whole number from 1 to {MAX_ATTEMPTS}, got {_shown(value)}",
        )
    return value


def blockers(ids: Sequence[str], field: str = "blocked_by") -> list[str]:
    """The blocker ids without repeats; at most :data:`MAX_BLOCKERS`, each an identifier."""
    if len(ids) > MAX_BLOCKERS:
        raise LimitError(
            field,
            MAX_BLOCKERS,
            f"{field} lists {len(ids)} tasks, more than the limit of {MAX_BLOCKERS}; "
            "block on a task that gathers them instead",
        )
    return list(dict.fromkeys(validate_identifier(i, f"{field} entry") for i in ids))


def name(value: str, field: str) -> str:
    """A name (team, lead, member, spec) or the id of a task a call names: an identifier."""
    return validate_identifier(value, field)


def member_name(value: str, field: str = "member name") -> str:
    """The name of a new member (or lead): an identifier without ``/``, so the HTTP API can name
    it in a path (``/inbox/{member}``). Members created before this rule keep their names."""
    validate_identifier(value, field)
    if "/" in value:
        raise ValueError(
            f"{field} {value!r} may not contain '/' (the API names members in URL paths); "
            f"use '-' instead, e.g. {value.replace('/', '-')!r}"
        )
    return value


def title(value: str, field: str = "title") -> str:
    """One line of 1 to :data:`MAX_TITLE` characters without control characters."""
    return _text(value, field, MAX_TITLE, minimum=1, multiline=False)


def text(value: str, field: str) -> str:
    """Free text of at most :data:`MAX_TEXT` characters; tabs and line breaks are allowed."""
    return _text(value, field, MAX_TEXT, minimum=0, multiline=True)


def read_limit(value: object, field: str = "limit") -> int:
    if not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_READ):
        raise LimitError(
            field, MAX_READ, f"{field} must be from 1 to {MAX_READ} messages, got {_shown(value)}"
        )
    return value


def timeout(value: object, field: str = "timeout") -> float:
    """A finite number of seconds ``>= 0``."""
    seconds = _number(value)
    if seconds is None or not (math.isfinite(seconds) and seconds >= 0):
        raise LimitError(
            field, math.inf, f"{field} must be a finite number of seconds >= 0, got {_shown(value)}"
        )
    return seconds


def _text(value: str, field: str, limit: int, *, minimum: int, multiline: bool) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{field} must be a string, got {type(value).__name__}")
    if len(value) > limit:
        raise LimitError(
            field, limit, f"{field} is {len(value)} characters long; it may be at most {limit}"
        )
    if len(value) < minimum:
        raise ValueError(f"{field} must not be empty")
    found = (_CONTROL_BUT_BREAKS if multiline else _CONTROL).search(value)
    if found is not None:
        where = "" if multiline else " (it must fit on one line)"
        raise ValueError(
            f"{field} contains the control character U+{ord(found.group()):04X}{where}; remove it"
        )
    return value


def _shown(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) <= 40 else shown[:20] + f"... ({len(shown)} characters)"
