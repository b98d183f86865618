"""Statements sent on the driver's own connection (asyncpg on PostgreSQL), for hot paths.

A statement through SQLAlchemy's ``AsyncConnection`` costs about 0.2 ms of Python on top of
asyncpg's own work (the ``Connection`` object and its events, greenlet switches, the result
proxy, parameter processing). :meth:`~.store.SqlStore.with_driver` borrows a connection from the
engine's pool itself (its raw pooled connection: ≈ 30 µs, and the same connection budget) and
hands the caller the asyncpg connection under it: statements with numbered parameters (``$1``)
that asyncpg prepares once per connection (its statement cache) and runs in autocommit (no
transaction is open on it). :func:`numbered` turns a ``:name`` template
into that form once per shape.

asyncpg's errors do not pass through SQLAlchemy, so :func:`classify` sorts them for the store's
retry loop: a serialization failure or deadlock is retried, a lost connection is "unavailable",
anything else a failure named by its SQLSTATE. Tests count these statements through
:data:`Watchers` (while one is registered, the caller gets a proxy of the connection that tells
it each statement as it is sent).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import Enum

#: Callbacks told the text of every statement a :meth:`~.store.SqlStore.with_driver` call runs.
Watchers = list[Callable[[str], None]]

_NAME = re.compile(r"(?<![:\w]):([A-Za-z_]\w*)")
_TRANSIENT = ("40001", "40P01")


class Failure(Enum):
    """How the store treats a driver error."""

    RETRY = "retry"  #: a lock conflict: run the operation again
    LOST = "lost"  #: the connection is gone: the store is unavailable
    FAILED = "failed"  #: the statement failed (a bug or a bad database): not retried
    FOREIGN = "foreign"  #: not a driver error: raised as is


def numbered(template: str) -> tuple[str, tuple[str, ...]]:
    """``template`` with each ``:name`` replaced by ``$n`` (one number per distinct name, in
    order of first use; ``::type`` casts are left alone) and the names in parameter order."""
    names: list[str] = []

    def number(m: re.Match[str]) -> str:
        if m.group(1) not in names:
            names.append(m.group(1))
        return f"${names.index(m.group(1)) + 1}"

    return _NAME.sub(number, template), tuple(names)


def classify(exc: BaseException) -> Failure:
    """What ``exc``, raised by a statement on the asyncpg connection, means for the store."""
    try:
        import asyncpg
    except ImportError:  # pragma: no cover - the postgres extra is installed with_driver runs
        return Failure.FOREIGN
    if isinstance(exc, asyncpg.PostgresError):
        if exc.sqlstate in _TRANSIENT:
            return Failure.RETRY
        if str(exc.sqlstate or "").startswith(("08", "57P")):  # connection, operator shutdown
            return Failure.LOST
        return Failure.FAILED
    if isinstance(exc, asyncpg.InterfaceError | OSError | ConnectionError):
        return Failure.LOST
    return Failure.FOREIGN


def sqlstate(exc: BaseException) -> str:
    """The SQLSTATE of a driver error, or its class name."""
    state = getattr(exc, "sqlstate", None)
    return f"SQLSTATE {state}" if isinstance(state, str) and state else type(exc).__name__
