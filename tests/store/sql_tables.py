"""Clean-up of the tables a test's :class:`~agentscope_teams.store.sql.SqlStore` made."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from agentscope_teams.store.sql import async_url, make_tables


async def drop_store_tables(url: str, prefix: str) -> None:
    """Drop the tables of a store made with ``table_prefix=prefix`` at ``url`` and, on
    PostgreSQL, its lease function."""
    engine = create_async_engine(async_url(url))
    try:
        async with engine.begin() as conn:
            await conn.run_sync(make_tables(prefix).metadata.drop_all)
            if engine.dialect.name == "postgresql":
                await conn.execute(text(f"DROP FUNCTION IF EXISTS {prefix}create_then_get"))
    finally:
        await engine.dispose()
