"""Reading the session records AgentScope 2.0's storages wrote, as parsed JSON dicts.

* ``redis://host:port/db`` (``rediss://`` too): ``RedisStorage``'s layout, one JSON string per
  session at ``<prefix>:user:<user_id>:session:<session_id>``. ``?prefix=`` names the prefix when the
  storage was given a ``KeyConfig`` with another one (default ``agentscope``).
* ``sqlite:///path.db``, ``postgresql://...``, ``mysql://...`` (a ``+driver`` is accepted):
  ``AsyncSQLAlchemyStorage``'s ``sessions`` table (``?table=`` for another name), whose ``payload``
  JSON holds what the id, timestamp and owner columns do not.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from ..errors import ConfigurationError
from ..store._redis_client import check_url
from ..store.redact import redact_text, redact_url
from ..store.url import require_drivers

_REDIS = ("redis", "rediss")
_SQL = ("sqlite", "postgresql", "postgres", "mysql", "mariadb")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


@dataclass(frozen=True)
class Found:
    """One stored record: where it was (for reports) and its JSON, or why it could not be parsed."""

    where: str
    raw: dict[str, Any] | None
    problem: str | None = None


def _split(url: str) -> tuple[str, str, dict[str, str]]:
    """(scheme, the URL without its query, the query options)."""
    plain, _, query = url.partition("?")
    options = {k: v[-1] for k, v in parse_qs(query).items()}
    return plain.partition("://")[0].lower(), plain, options


def check_source_url(url: str) -> None:
    """Raise :class:`ConfigurationError` if ``url`` names no AgentScope storage this can read
    (:class:`MissingDependencyError`, naming the extra, when its driver is not installed)."""
    scheme, plain, options = _split(url)
    base = scheme.partition("+")[0]
    if base not in (*_REDIS, *_SQL):
        raise ConfigurationError(
            f"--from {redact_url(url)!r}: not an AgentScope storage URL; use redis://host:6379/0 "
            "(RedisStorage) or sqlite:////abs/path.db, postgresql://user@host/db, "
            "mysql://user@host/db (AsyncSQLAlchemyStorage)"
        )
    table = options.get("table", "sessions")
    if not _NAME.match(table):
        raise ConfigurationError(f"--from {redact_url(url)!r}: table={table!r} is not a table name")
    if base == "sqlite":
        path = plain.partition("://")[2][1:]
        if not path or not Path(path).is_file():
            raise ConfigurationError(
                f"--from {redact_url(url)!r}: no SQLite database file at {path!r}; use sqlite:////abs/path.db "
                "(four slashes for an absolute path)"
            )
    require_drivers(plain)
    if base in _REDIS:
        import redis

        check_url(redis, plain)  # a /db that is not a number: refused, not read as database 0


async def read_records(url: str) -> AsyncIterator[Found]:
    """Every session record stored at ``url``, in a stable order (by key / by id).

    ``ConfigurationError`` if the URL is unusable or the source cannot be read (its driver's
    error: connection refused, missing table, ...); only reading is covered, not the consumer.
    """
    check_source_url(url)
    scheme = _split(url)[0].partition("+")[0]
    reader = _redis_records if scheme in _REDIS else _sql_records
    try:
        async for found in reader(url):
            yield found
    except ConfigurationError:  # e.g. the driver is not installed: already says what to do
        raise
    except Exception as exc:
        raise ConfigurationError(
            f"cannot read AgentScope sessions from {redact_url(url)}: {type(exc).__name__}: "
            f"{redact_text(str(exc), url)}"
        ) from exc


#: Deeper JSON than this is refused: no AgentScope record nests near it, and a record nested
#: thousands deep would exhaust the parser's or the serializer's recursion.
MAX_DEPTH = 128


class _Unrepresentable(ValueError):
    """A JSON number that is no finite float (``1e999``, ``NaN``, ``Infinity``)."""


def _finite(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise _Unrepresentable(f"the number {text} is not finite")
    return value


def _constant(text: str) -> float:
    raise _Unrepresentable(f"{text} is not a JSON number")


def json_problem(value: Any) -> str | None:
    """Why ``value`` (parsed JSON) cannot be stored, or None: nested deeper than
    :data:`MAX_DEPTH`, or holding a non-finite number. Walked without recursion."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float) and (item != item or item in (float("inf"), float("-inf"))):
            return f"holds the number {item}, which JSON cannot store"
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return f"nested deeper than {MAX_DEPTH} levels"
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return None


def checked(where: str, value: Any) -> Found:
    """``value`` as a record of ``where``, or refused with why (see :func:`json_problem`)."""
    if not isinstance(value, dict):
        return Found(where, None, "not a JSON object")
    problem = json_problem(value)
    return Found(where, None, problem) if problem else Found(where, value)


def _parsed(where: str, text: str | bytes) -> Found:
    try:
        value = json.loads(text, parse_float=_finite, parse_constant=_constant)
    except _Unrepresentable as exc:
        return Found(where, None, str(exc))
    except RecursionError:
        return Found(where, None, f"not JSON this can read: nested deeper than {MAX_DEPTH} levels")
    except ValueError as exc:  # UnicodeDecodeError included
        return Found(where, None, f"not JSON: {exc}")
    return checked(where, value)


async def _redis_records(url: str) -> AsyncIterator[Found]:
    import redis.asyncio as aioredis

    _, plain, options = _split(url)
    prefix = options.get("prefix", "agentscope")
    shape = re.compile(re.escape(prefix) + r":user:.+:session:[^:]+")
    client = aioredis.Redis.from_url(plain)
    try:
        names = sorted(
            {
                name
                async for name in client.scan_iter(match=f"{_glob(prefix)}:user:*:session:*")
                if shape.fullmatch(name.decode(errors="replace"))
            }
        )
        for name in names:
            where = name.decode(errors="backslashreplace")
            try:
                value = await client.get(name)
            except aioredis.ResponseError as exc:  # WRONGTYPE: another program's hash or list
                yield Found(where, None, f"not a session record (a JSON string): {exc}")
                continue
            if value is not None:  # deleted or expired since the scan
                yield _parsed(where, value)
    finally:
        await client.aclose()


def _glob(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


async def _sql_records(url: str) -> AsyncIterator[Found]:
    from sqlalchemy import text

    from ..store.sql.dialect import create_engine

    _, plain, options = _split(url)
    table = options.get("table", "sessions")
    engine = create_engine(plain, 10.0, {})
    try:
        async with engine.connect() as conn:
            rows = await conn.execute(
                text(
                    "SELECT id, created_at, updated_at, user_id, agent_id, team_id, source, "
                    "source_schedule_id, payload "
                    f"FROM {table} ORDER BY id"
                )
            )
            for row in rows:
                payload = row.payload
                where = f"{table}/{row.id}"
                if isinstance(payload, str | bytes):  # JSON text on dialects without a JSON type
                    found = _parsed(where, payload)
                elif isinstance(payload, dict):
                    found = checked(where, payload)
                else:
                    found = Found(where, None, f"payload is {type(payload).__name__}, not JSON")
                if found.raw is None:
                    yield found
                    continue
                raw = dict(found.raw)
                raw.update(
                    id=row.id,
                    created_at=_iso(row.created_at),
                    updated_at=_iso(row.updated_at),
                    user_id=row.user_id,
                    agent_id=row.agent_id,
                    team_id=row.team_id,
                )
                if "origin" not in raw:  # a row from before ``origin``: the columns hold it
                    raw.update(source=row.source, source_schedule_id=row.source_schedule_id)
                yield Found(found.where, raw)
    finally:
        await engine.dispose()


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value
