"""``SqlStore.with_driver``: statements on the asyncpg connection of a pooled one, with the store's
retries and errors (PostgreSQL only)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from agentscope_teams.errors import ConfigurationError, StoreError, public_message
from agentscope_teams.store.sql import SqlStore
from agentscope_teams.store.sql.driver import numbered

from ..backends import SERVICE_URLS
from ..conftest import require_service

pytestmark = pytest.mark.anyio


@pytest.fixture
async def pg_store() -> AsyncIterator[SqlStore]:
    require_service("postgres")
    async with SqlStore(SERVICE_URLS["postgres"], table_prefix=f"d{uuid.uuid4().hex[:8]}_") as s:
        yield s


def test_named_parameters_become_numbered_once_per_name() -> None:
    sql, names = numbered("SELECT :a, CAST(:b AS text), :a, '[]'::jsonb, x::int WHERE y = :b")
    assert sql == "SELECT $1, CAST($2 AS text), $1, '[]'::jsonb, x::int WHERE y = $2"
    assert names == ("a", "b")


async def test_a_statement_runs_on_the_driver_connection(pg_store: SqlStore) -> None:
    async def run(conn: Any) -> Any:
        return await conn.fetchval("SELECT $1::int + 1", 41)

    assert await pg_store.with_driver("probe", run) == 42
    assert await pg_store.with_driver("probe", run) == 42  # the connection went back sound


async def test_a_lock_conflict_is_retried_and_a_failure_named_by_its_sqlstate(
    pg_store: SqlStore,
) -> None:
    import asyncpg

    calls: list[int] = []

    async def conflicting(conn: Any) -> int:
        calls.append(1)
        if len(calls) == 1:
            raise asyncpg.exceptions.SerializationError("could not serialize access")
        return int(await conn.fetchval("SELECT 7"))

    assert await pg_store.with_driver("probe", conflicting) == 7 and len(calls) == 2

    async def broken(conn: Any) -> Any:
        return await conn.fetch("SELECT * FROM no_such_table_here")

    with pytest.raises(StoreError) as caught:
        await pg_store.with_driver("probe", broken)
    public = public_message(caught.value)
    assert "SQLSTATE 42P01" in public and "no_such_table_here" in str(caught.value)
    assert "127.0.0.1" not in public


async def test_other_databases_refuse_it(tmp_path: Any) -> None:
    async with SqlStore(f"sqlite:///{tmp_path / 'store.db'}") as store:
        with pytest.raises(ConfigurationError, match="PostgreSQL and MySQL only"):
            await store.with_driver("probe", lambda conn: conn.fetchval("SELECT 1"))


async def test_bytes_are_sent_to_mysql_as_a_hexadecimal_literal_and_come_back_whole() -> None:
    """``rendered`` writes ``bytes`` as ``X'…'`` (no escaping pass over a record), and any byte
    (quotes, backslashes, NUL) reads back as sent."""
    require_service("mariadb")
    from agentscope_teams.store.sql import mysql_rows, pyformat, rendered

    raw = bytes(range(256)) + b"'\\\"%s"
    async with SqlStore(SERVICE_URLS["mariadb"], table_prefix=f"d{uuid.uuid4().hex[:8]}_") as s:

        async def run(conn: Any) -> Any:
            sql = rendered(conn, pyformat("SELECT :v, :t; COMMIT"), {"v": raw, "t": "it's"})
            assert sql.startswith(f"SELECT X'{raw.hex()}', ")
            return (await mysql_rows(conn, sql))[0]

        value, text = await s.with_driver("probe", run)
    assert bytes(value) == raw and text == "it's"
