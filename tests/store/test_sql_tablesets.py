"""Tables other packages keep in a SqlStore's database (the public table-set hook): created and
migrated by ``setup()`` (or on first use when registered later), recorded once, and a database
migrated before the board's tables moved out of the store keeps them and upgrades."""

from __future__ import annotations

import ast
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.store.sql import SqlStore, TableSet, async_url, create_table, make_tables
from agentscope_teams.store.sql.schema import LATEST, schema_table
from agentscope_teams.teams import TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues.sql_tables import BOARD_TABLES

from ..backends import SERVICE_URLS
from ..conftest import require_service

pytestmark = pytest.mark.anyio
PACKAGE = Path(__file__).resolve().parents[2] / "agentscope_teams"


def _notes(md: MetaData, prefix: str) -> list[Table]:
    return [
        Table(f"{prefix}note", md, Column("id", Integer, primary_key=True), Column("s", String(20)))
    ]


async def _m1(conn: AsyncConnection, tables: Mapping[str, Table]) -> None:
    await create_table(conn, tables["note"])


NOTES = TableSet("notes", _notes, ((1, "note", _m1),))


@pytest.fixture(params=["sqlite", "postgres", "mariadb"])
def sql_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    require_service(request.param)
    return SERVICE_URLS[request.param]


@pytest.fixture(params=["postgres", "mariadb"])
def server_url(request: pytest.FixtureRequest) -> str:
    """A database with a native board queue (SQLite has none)."""
    require_service(request.param)
    return SERVICE_URLS[request.param]


@pytest.fixture
async def prefix(request: pytest.FixtureRequest) -> AsyncIterator[str]:
    """A fresh table prefix; its tables (the store's and both sets') are dropped after the test."""
    sql_url = request.getfixturevalue(
        "server_url" if "server_url" in request.fixturenames else "sql_url"
    )
    name = f"t{uuid.uuid4().hex[:8]}_"
    yield name
    engine = create_async_engine(async_url(sql_url))
    md = make_tables(name).metadata  # the store's tables, the two sets' and their records
    _notes(md, name), BOARD_TABLES.define(md, name)
    for set_name in ("notes", "board"):
        schema_table(md, f"{name}{set_name}_")
    try:
        async with engine.begin() as conn:
            await conn.run_sync(md.drop_all)
    finally:
        await engine.dispose()


async def versions(store: SqlStore, record: str) -> list[int]:
    table = schema_table(MetaData(), f"{store._table_prefix}{record}")
    async with store._engine.connect() as conn:
        return list(await conn.scalars(select(table.c.version).order_by(table.c.version)))


async def test_a_set_used_after_setup_is_created_and_recorded_once(
    sql_url: str, prefix: str
) -> None:
    async with SqlStore(sql_url, table_prefix=prefix) as store:
        notes = store.tables(NOTES)["note"]  # registers it: the next operation sets it up
        await store.transaction(
            "note", lambda c: c.execute(insert(notes).values(id=1, s="x")), write=True
        )
        assert await versions(store, "notes_") == [1]
    async with SqlStore(sql_url, table_prefix=prefix) as again:
        rows = await again.transaction("read", lambda c: _all(c, again.tables(NOTES)["note"]))
        assert rows == [(1, "x")] and await versions(again, "notes_") == [1]


async def _all(conn: AsyncConnection, table: Table) -> list[tuple[object, ...]]:
    return [tuple(r) for r in await conn.execute(select(table))]


async def test_a_database_from_before_the_move_keeps_its_board(
    server_url: str, prefix: str
) -> None:
    """As migrated by the older store: its migration 2 made the board's tables, with rows in
    them, and no ``board_schema`` record exists. The board reads its tasks on, and records the
    board's migrations (1 without recreating anything, 2 adding the claim's probe indexes, 3
    indexing free and routed pending tasks apart)."""
    keys = TeamKeys(RuntimeContext(session_id="s").owner_scope(), "old-team")
    async with SqlStore(server_url, table_prefix=prefix) as store:
        board = TaskBoard(store, keys, native=True)
        task = await board.create("lead", "from before")
        board_record = schema_table(MetaData(), f"{prefix}board_")
        async with store._engine.begin() as conn:  # back to how the older store left it
            await conn.run_sync(board_record.drop)
    assert await versions_of(server_url, prefix, "") == list(
        range(1, LATEST + 1)
    )  # the store's own
    async with SqlStore(server_url, table_prefix=prefix) as store:
        board = TaskBoard(store, keys, native=True)
        claimed = await board.claim_next("a", 60.0)
        assert claimed is not None and claimed.id == task.id
        assert await versions(store, "board_") == [1, 2, 3, 4]


async def versions_of(url: str, prefix: str, record: str) -> list[int]:
    async with SqlStore(url, table_prefix=prefix) as store:
        return await versions(store, record)


def test_a_set_is_named_and_numbered() -> None:
    with pytest.raises(ConfigurationError, match="lowercase"):
        TableSet("Bad Name", _notes, ())
    with pytest.raises(ConfigurationError, match=r"numbered 1, 2, 3"):
        TableSet("notes2", _notes, ((2, "note", _m1),))


def test_the_board_queue_uses_only_the_public_interface_of_the_store() -> None:
    """No ``store._...`` attribute, no private store module, in the board's SQL queue."""
    for path in sorted((PACKAGE / "teams" / "queues").glob("sql*.py")):
        tree = ast.parse(path.read_text())
        private = [
            f"{path.name}:{n.lineno}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Attribute)
            and n.attr.startswith("_")
            and "store" in ast.unparse(n.value)
        ]
        modules = [
            f"{path.name}:{n.lineno}: {n.module}"
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom)
            and "store.sql." in f"{n.module}."
            and n.module not in ("store.sql", None)
        ]
        assert private == [] and modules == [], (private, modules)
