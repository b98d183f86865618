"""Documents written by the release before usage rows (maps embedded in each JSON document) keep
working: the usage tables' migration 2 moves their reservations, tenants and leases into rows
(heads keep the counts), after which ADMIT and FINISH decide on them as the rules decide on the
old documents, and what had ended is still dropped. A process of that release refuses the
migrated tables (its setup raises ``SchemaVersionError``) instead of reading heads without maps."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from sqlalchemy import MetaData, text

from agentscope_teams.errors import SchemaVersionError
from agentscope_teams.store import SqlStore
from agentscope_teams.store.sql.schema import apply_migrations, schema_table
from agentscope_teams.usage import backend as usage_backends
from agentscope_teams.usage import rules
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.docs import doc_id
from agentscope_teams.usage.rules import Admission, Limit, Rates
from agentscope_teams.usage.sql_docs import USAGE_TABLES
from agentscope_teams.usage.sql_pg import PgUsage

from ..backends import StoreSpec

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("store_spec", ["postgres", "mariadb", "sqlite"], indirect=True),
]
NOW = 10_000_000
LIVE, GONE = NOW + 60_000, NOW - 1
#: A budget and a limiter as the release before rows wrote them: a live and an ended reservation,
#: a live, a stale and the caller's tenant, a live and an ended lease.
OLD = {
    "budget": {
        "ut": 40, "un": 0, "rt": 130, "rn": 0,
        "res": {"live": [100, 0, LIVE], "dead": [30, 0, GONE]},
    },
    "limiter": {
        "tat": NOW - 50.0, "ttat": 0.0, "hold": 0.0,
        "ten": {"o": [NOW + 100.0, NOW - 5.0], "old": [NOW, NOW - 1e6], "me": [NOW - 50.0, NOW - 9.0]},
        "lease": {"live": LIVE, "dead": GONE},
        "last": ["live", 100.0, 100.0, 0.0],
    },
}  # fmt: skip
RATES = Rates(rpm=600, concurrent=2)


@asynccontextmanager
async def _opened(url: str, prefix: str) -> AsyncIterator[SqlStore]:
    async with SqlStore(url, table_prefix=prefix) as store:
        yield store


@pytest.fixture
async def prefix(store_spec: StoreSpec) -> AsyncIterator[str]:
    """A table prefix of the test's own; its tables are dropped afterwards."""
    name = "mig" + uuid.uuid4().hex[:6] + "_"
    yield name
    async with _opened(store_spec.url, name) as store:
        schema = " AND table_schema = DATABASE()" if store.dialect == "mysql" else ""
        if store.dialect == "sqlite":
            query = "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE :p"
        else:
            query = (
                f"SELECT table_name FROM information_schema.tables WHERE table_name LIKE :p{schema}"
            )

        async def drop(conn: Any) -> None:
            for table in (await conn.execute(text(query), {"p": name + "%"})).scalars().all():
                await conn.execute(text(f"DROP TABLE {table}"))

        await store._db.run("drop test tables", drop, write=True)  # type: ignore[attr-defined]


async def _as_before_rows(url: str, prefix: str, names: dict[str, str]) -> None:
    """The usage tables as the release before rows left them, holding the ``OLD`` documents."""
    async with _opened(url, prefix) as store:
        await store.setup()
        usage_backend(store)  # registers and creates the usage tables
        await store.setup()

        async def run(conn: Any) -> None:
            await conn.execute(text(f"DROP TABLE {prefix}usage_entry"))
            await conn.execute(text(f"DELETE FROM {prefix}usage_schema WHERE version = 2"))
            insert = text(f"INSERT INTO {prefix}usage_doc (id, doc) VALUES (:id, :doc)")
            for short, doc in OLD.items():
                await conn.execute(insert, {"id": doc_id(names[short]), "doc": json.dumps(doc)})

        await store.transaction("as before rows", run, write=True)


def _clock(monkeypatch: pytest.MonkeyPatch, now: int) -> None:
    monkeypatch.setattr(usage_backends, "now_ms", lambda: now)


async def _admit(be: Any, a: Admission, now: int) -> rules.Admitted:
    return await be.admit_at(a, now) if isinstance(be, PgUsage) else await be.admit(a)


async def test_documents_of_the_release_before_rows_are_migrated_and_keep_deciding(
    store_spec: StoreSpec, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tag = uuid.uuid4().hex[:6]
    names = {"budget": f"team:{tag}", "limiter": f"p|m|{tag}"}
    await _as_before_rows(store_spec.url, prefix, names)
    async with _opened(store_spec.url, prefix) as store:  # a process of this release: migrates
        be = usage_backend(store)
        migrated = {short: await be.read(name) for short, name in names.items()}
        limiter = migrated["limiter"]
        assert limiter is not None and (limiter.pop("nten"), limiter.pop("nlease")) == (3, 2)
        assert migrated == OLD  # the same documents, as rows
        old = {names[s]: d for s, d in OLD.items()}
        a = Admission(
            (Limit(names["budget"], 200, None),), "new", 50, 0, names["limiter"], RATES, "me"
        )
        want_docs, want = rules.admit(old, a, NOW)
        _clock(monkeypatch, NOW)
        assert await _admit(be, a, NOW) == want == rules.GRANTED
        budget, limiter = await be.read(names["budget"]), await be.read(names["limiter"])
        assert budget is not None and limiter is not None
        assert sorted(budget["res"]) == ["live", "new"] and budget["rt"] == 150  # dead dropped
        assert sorted(limiter["lease"]) == ["live", "new"] and limiter["nlease"] == 2
        assert sorted(limiter["ten"]) == ["me", "o"] and limiter["nten"] == 2  # old dropped
        assert limiter["ten"] == want_docs[names["limiter"]]["ten"]
        finished = rules.finish(want_docs, a, 20, 0, NOW)
        if isinstance(be, PgUsage):
            await be.finish_at(a, 20, 0, NOW)
        else:
            await be.finish(a, 20, 0)
        budget = await be.read(names["budget"])
        assert budget is not None
        assert (
            (budget["ut"], budget["rt"])
            == (60, 100)
            == (
                finished[names["budget"]]["ut"],
                finished[names["budget"]]["rt"],
            )
        )


async def test_a_process_of_the_release_before_rows_refuses_the_migrated_tables(
    store_spec: StoreSpec, prefix: str
) -> None:
    async with _opened(store_spec.url, prefix) as store:
        usage_backend(store)
        await store.setup()

        async def older(conn: Any) -> None:  # what that release's setup runs: migration 1 only
            record = schema_table(MetaData(), f"{prefix}usage_")
            steps = [(v, d, lambda c: _nothing()) for v, d, _ in USAGE_TABLES.migrations[:1]]
            await apply_migrations(conn, record, steps)

        with pytest.raises(SchemaVersionError, match=r"usage_schema.*version 2"):
            await store.transaction("setup of the release before", older, write=True)


async def _nothing() -> None:
    return None
