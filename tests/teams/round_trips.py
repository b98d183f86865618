"""Counting a store's round trips to its server (not its ``BaseStore`` calls): every Redis command
sent (a script call is one), every SQL statement executed (through SQLAlchemy or on the asyncpg
connection itself) and every BEGIN and COMMIT of a transaction (PostgreSQL's autocommit
statements have neither)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from agentscope_teams.store import BaseStore


@dataclass
class RoundTrips:
    seen: list[str] = field(default_factory=list)
    #: Redis only: the first key (or channel) each command names, beside ``seen``.
    keys: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.seen)


@asynccontextmanager
async def count_round_trips(store: BaseStore) -> AsyncIterator[RoundTrips]:
    """Count what ``store`` sends to its server inside the block (Redis commands, SQL statements)."""
    counter = RoundTrips()
    kind = type(store).__name__
    if kind == "RedisStore":
        client: Any = store._client  # type: ignore[attr-defined]
        original = client.execute_command

        async def counted(*args: Any, **options: Any) -> Any:
            counter.seen.append(str(args[0]))
            first = args[3] if args[0] == "EVALSHA" and len(args) > 3 else args[1:2]
            counter.keys.append(str(first[0] if isinstance(first, tuple) else first))
            return await original(*args, **options)

        client.execute_command = counted
        try:
            yield counter
        finally:
            del client.execute_command
        return
    if kind == "SqlStore":
        from sqlalchemy import event

        engine = store._engine.sync_engine  # type: ignore[attr-defined]

        def on_execute(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
            if statement.lstrip().startswith("SELECT pg_notify("):  # a wake-up of its own
                counter.seen.append("NOTIFY")
                return
            counter.seen.append(statement.split(None, 1)[0].upper())

        def on_begin(conn: Any) -> None:
            # asyncpg sends BEGIN; the MySQL drivers begin implicitly with the first statement
            autocommit = conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT"
            if conn.dialect.name == "postgresql" and not autocommit:
                counter.seen.append("BEGIN")

        def on_commit(conn: Any) -> None:
            if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
                counter.seen.append("COMMIT")

        def on_driver(statement: str) -> None:  # sent on the asyncpg connection (with_driver)
            on_execute(None, None, statement)

        hooks = {"before_cursor_execute": on_execute, "begin": on_begin, "commit": on_commit}
        for name, hook in hooks.items():
            event.listen(engine, name, hook)
        watchers = store._db.watchers  # type: ignore[attr-defined]
        watchers.append(on_driver)
        try:
            yield counter
        finally:
            watchers.remove(on_driver)
            for name, hook in hooks.items():
                event.remove(engine, name, hook)
        return
    raise TypeError(f"cannot count the round trips of {kind}")
