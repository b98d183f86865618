"""Counting a store's round trips to its server (not its ``BaseStore`` calls): every Redis command
sent (a script call is one), every SQL statement executed (through SQLAlchemy or on the asyncpg
connection itself) and every BEGIN and COMMIT of a transaction (PostgreSQL's autocommit
statements have neither)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from agentscope_teams.store import BaseStore

#: The commands that run a script: its first key is the third argument.
SCRIPT_CALLS = ("EVALSHA", "FCALL")


def board_call(store: BaseStore) -> str:
    """The command the board's native queue runs its scripts with on ``store`` (once it has run
    one): ``FCALL`` where the store calls the queue's Redis functions, else ``EVALSHA``."""
    from agentscope_teams.teams.queues import redis as queue_redis

    prepared = queue_redis._PREPARED[store]  # type: ignore[index]
    return "FCALL" if isinstance(prepared["CLAIM"], queue_redis._Function) else "EVALSHA"


@dataclass
class RoundTrips:
    seen: list[str] = field(default_factory=list)
    #: Redis only: the first key (or channel) each command names, beside ``seen``.
    keys: list[str] = field(default_factory=list)
    #: SQL only: the text of each statement, beside ``seen`` (BEGIN and COMMIT as such).
    statements: list[str] = field(default_factory=list)
    #: SQL only: the statements sent on the driver's own connection (``with_driver``), not
    #: through SQLAlchemy, by their index in ``statements``.
    on_driver: set[int] = field(default_factory=set)

    @property
    def count(self) -> int:
        return len(self.seen)


@asynccontextmanager
async def count_round_trips(
    store: BaseStore, *, pipelines: bool = False, gate: int = 0
) -> AsyncIterator[RoundTrips]:
    """Count what ``store`` sends to its server inside the block (Redis commands, SQL statements).

    Redis only: with ``pipelines``, a pipeline is counted too, as one round trip named
    ``PIPELINE`` and the commands it holds (``PIPELINE HMGET``; without it a pipeline is not
    seen). ``gate``: the first ``gate`` round trips are held until all of them were sent, so a
    block that sends them one after the other never finishes (a test of concurrency that does
    not time anything: it waits under a ``fail_after`` guard)."""
    counter = RoundTrips()
    kind = type(store).__name__
    if kind == "RedisStore":
        async with _count_redis(store._client, counter, pipelines, gate):  # type: ignore[attr-defined]
            yield counter
        return
    if kind == "SqlStore":
        from sqlalchemy import event

        engine = store._engine.sync_engine  # type: ignore[attr-defined]

        def on_execute(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
            counter.statements.append(statement)
            if statement.lstrip().startswith("SELECT pg_notify("):  # a wake-up of its own
                counter.seen.append("NOTIFY")
                return
            counter.seen.append(statement.split(None, 1)[0].upper())

        def on_begin(conn: Any) -> None:
            # asyncpg sends BEGIN; the MySQL drivers begin implicitly with the first statement
            autocommit = conn.get_execution_options().get("isolation_level") == "AUTOCOMMIT"
            if conn.dialect.name == "postgresql" and not autocommit:
                counter.seen.append("BEGIN")
                counter.statements.append("BEGIN")

        def on_commit(conn: Any) -> None:
            if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
                counter.seen.append("COMMIT")
                counter.statements.append("COMMIT")

        def on_driver(statement: str) -> None:  # sent on the asyncpg connection (with_driver)
            counter.on_driver.add(len(counter.statements))
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


@asynccontextmanager
async def _count_redis(
    client: Any, counter: RoundTrips, pipelines: bool, gate: int
) -> AsyncIterator[None]:
    original, make_pipeline = client.execute_command, client.pipeline
    held = anyio.Event()
    left = [gate]

    async def through_gate() -> None:
        if left[0] > 0:
            left[0] -= 1
            if left[0] == 0:
                held.set()
            await held.wait()

    async def counted(*args: Any, **options: Any) -> Any:
        counter.seen.append(str(args[0]))
        first = args[3] if args[0] in SCRIPT_CALLS and len(args) > 3 else args[1:2]
        counter.keys.append(str(first[0] if isinstance(first, tuple) else first))
        await through_gate()
        return await original(*args, **options)

    def pipeline(*args: Any, **options: Any) -> Any:
        pipe = make_pipeline(*args, **options)
        execute = pipe.execute

        async def counted_execute(*args: Any, **options: Any) -> Any:
            stack = [command for command, _ in pipe.command_stack]
            counter.seen.append(" ".join(["PIPELINE", *sorted({str(c[0]) for c in stack})]))
            counter.keys.append(str(stack[0][1]) if stack and len(stack[0]) > 1 else "")
            await through_gate()
            return await execute(*args, **options)

        pipe.execute = counted_execute
        return pipe

    client.execute_command = counted
    if pipelines:
        client.pipeline = pipeline
    try:
        yield
    finally:
        del client.execute_command
        if pipelines:
            del client.pipeline
