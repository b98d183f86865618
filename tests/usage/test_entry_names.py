"""Tenants whose names differ only in case, accents or trailing spaces are distinct tenants on
every SQL store, as in the rules (on whole documents): the same answers to the same admissions,
and a limiter's count of tenants equal to its tenants' rows (MariaDB compares a text column's
values case- and accent-insensitively, ignoring trailing spaces)."""

from __future__ import annotations

import uuid

import pytest

from agentscope_teams.store import BaseStore
from agentscope_teams.usage import backend as usage_backends
from agentscope_teams.usage import rules
from agentscope_teams.usage.backend import UsageBackend, usage_backend
from agentscope_teams.usage.rules import Admission, Rates
from agentscope_teams.usage.sql_pg import PgUsage

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("store_spec", ["postgres", "mariadb", "sqlite"], indirect=True),
]
NOW = 10_000_000
RATES = Rates(rpm=600)
TENANTS = ["Team", "team", "équipe", "equipe", "a", "a "]


async def _admit(be: UsageBackend, a: Admission, now: int) -> rules.Admitted:
    return await be.admit_at(a, now) if isinstance(be, PgUsage) else await be.admit(a)


async def test_tenants_differing_in_case_accents_or_spaces_are_distinct(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    be = usage_backend(store)
    key = f"limiter:{uuid.uuid4().hex[:8]}"
    doc: rules.Doc | None = None
    for i in range(3 * len(TENANTS)):
        now = NOW + 100 * i
        monkeypatch.setattr(usage_backends, "now_ms", lambda now=now: now)
        a = Admission((), uuid.uuid4().hex, 10, 0, key, RATES, TENANTS[i % len(TENANTS)])
        docs, expected = rules.admit({key: doc}, a, now)
        doc = docs.get(key, doc)
        got = await _admit(be, a, now)
        assert got.wait_ms == pytest.approx(expected.wait_ms), (i, a.tenant)
    stored = await be.read(key)
    assert stored is not None
    assert stored["nten"] == len(stored["ten"]) == len(TENANTS), stored
