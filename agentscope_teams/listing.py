"""Listings that decode many records (sessions, runs, tasks, teams, messages): one unreadable record
is reported, never hides the rest.

Every listing of stored records (``SessionStorage.list_sessions``, ``RunBook.list``, the task
board's ``list_tasks`` / ``open_tasks`` / ``open_board``, ``list_teams``, a team inbox read, the
team directory scan) returns a :class:`Listing`: a plain ``list`` of the records it could decode, so
existing callers keep working, whose ``problems`` name each record it could not decode
(:class:`Unreadable`: kind, id, store key, reason). Each problem is also logged as a warning.

A record is unreadable when it is not valid JSON, does not match its model, or was written by a
newer version (:class:`~agentscope_teams.errors.SchemaVersionError`): :data:`UNREADABLE`. Reading
that one record by its id still raises, so nothing is silently dropped where a single record was
asked for; a listing only goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from pydantic import ValidationError

from .errors import SchemaVersionError, first_problem
from .store.base import Key

T = TypeVar("T")

#: What decoding a stored record raises when the record (not the store) is at fault.
UNREADABLE: tuple[type[Exception], ...] = (SchemaVersionError, ValueError)

log = logging.getLogger("agentscope_teams.listing")


@dataclass(frozen=True, slots=True)
class Unreadable:
    """A record a listing skipped: what it is (``kind``: "session", "task", ...), its ``id``, its
    store ``key`` and why it could not be read (one line)."""

    kind: str
    id: str
    key: Key
    reason: str

    def __str__(self) -> str:
        return f"{self.kind} {self.id!r} cannot be read: {self.reason}"


class Listing(list[T]):
    """The records a listing decoded, oldest first as documented by each listing; ``problems``
    holds the records it skipped (empty when every record was read)."""

    def __init__(self, items: Iterable[T] = (), problems: Iterable[Unreadable] = ()) -> None:
        super().__init__(items)
        self.problems: list[Unreadable] = list(problems)


def describe(exc: BaseException) -> str:
    """One line saying why a record could not be decoded (a wrapped validation error: its first)."""
    if isinstance(exc.__cause__, ValidationError):
        exc = exc.__cause__
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        if errors:
            more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
            return first_problem(exc) + more
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def unreadable(kind: str, id: str, key: Key, exc: BaseException) -> Unreadable:
    """The problem record of a skipped record, logged as a warning."""
    problem = Unreadable(kind, id, tuple(key), describe(exc))
    log.warning("skipped in a listing: %s (store key %s)", problem, "/".join(problem.key))
    return problem
