"""The SQL stores' admit, finish and give-back agree with the rules
(:mod:`agentscope_teams.usage.rules`, on whole documents) on a table of cases: PostgreSQL's one
statement per step (:mod:`agentscope_teams.usage.sql_pg`), and MariaDB's and SQLite's rules run on
the head and the rows a step reads (:mod:`agentscope_teams.usage.sql_docs`). The same answer, and
the same documents afterwards as :meth:`read` assembles them from head and rows, a limiter's counts
checked against its rows (compared once expired reservations are taken off, which both do
lazily). Cases include what a dead process left (ended reservations and leases) and tenants at and
past the window, the caller's own among them."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from agentscope_teams.store import BaseStore
from agentscope_teams.usage import backend as usage_backends
from agentscope_teams.usage import rules
from agentscope_teams.usage.backend import DocsUsage, UsageBackend, usage_backend
from agentscope_teams.usage.rules import Admission, Limit, Rates
from agentscope_teams.usage.sql_pg import PgUsage

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("store_spec", ["postgres", "mariadb", "sqlite"], indirect=True),
]

NOW = 10_000_000
LIVE, GONE = NOW + 60_000, NOW - 1  # a reservation's or lease's expiry: still held, ended


def _budget(ut: int = 0, un: int = 0, held: dict[str, list[int]] | None = None) -> rules.Doc:
    res = held or {}
    rt, rn = sum(v[0] for v in res.values()), sum(v[1] for v in res.values())
    return {"ut": ut, "un": un, "rt": rt, "rn": rn, "res": res}


def _limiter(**fields: Any) -> rules.Doc:
    return {"tat": 0.0, "ttat": 0.0, "hold": 0.0, "ten": {}, "lease": {}, **fields}


# (what, documents before (A, B: budgets; L: the limiter), the budgets' limits, rates or None)
CASES: list[tuple[str, dict[str, rules.Doc | None], list[tuple[str, int | None, int | None]], Rates | None]] = [
    ("no documents yet", {"A": None}, [("A", 100, None)], None),
    ("budget under its limit", {"A": _budget(ut=10)}, [("A", 100, None)], None),
    ("budget at its limit", {"A": _budget(ut=100)}, [("A", 100, None)], None),
    ("budget over its limit", {"A": _budget(ut=150)}, [("A", 100, None)], None),
    ("rest held by a call in flight", {"A": _budget(50, held={"x": [50, 0, LIVE]})}, [("A", 100, None)], None),
    ("an ended call's reservation is given back", {"A": _budget(50, held={"x": [50, 0, GONE]})}, [("A", 100, None)], None),
    ("several budgets, the second refuses in USD", {"A": _budget(5, 5), "B": _budget(1, 600)}, [("A", 1000, 1000), ("B", None, 500)], None),
    ("several budgets, all admit", {"A": _budget(5, 5), "B": _budget(1, 6)}, [("A", 1000, 1000), ("B", None, 500)], None),
    ("limiter ready", {"L": None}, [], Rates(rpm=60)),
    ("limiter waiting for the next request", {"L": _limiter(tat=NOW + 5000.0)}, [], Rates(rpm=60)),
    ("a burst lets the turn pass", {"L": _limiter(tat=NOW + 500.0)}, [], Rates(rpm=60, burst=3)),
    ("fair share: the tenant's own clock is ahead", {"L": _limiter(tat=NOW - 10.0, ten={"me": [NOW + 900.0, NOW - 5.0], "o": [NOW, NOW - 5.0]})}, [], Rates(rpm=600)),
    ("a tenant not seen for long is forgotten", {"L": _limiter(ten={"old": [NOW - 1e6, NOW - 1e6], "o": [NOW, NOW - 5.0]})}, [], Rates(rpm=600)),
    ("tokens per minute: the bucket is full", {"L": _limiter(ttat=NOW + 9000.0)}, [], Rates(tpm=1000)),
    ("tokens per minute: room left", {"L": _limiter(ttat=NOW + 10.0)}, [], Rates(tpm=100000)),
    ("concurrency cap reached", {"L": _limiter(lease={"p": LIVE, "q": LIVE})}, [], Rates(concurrent=2)),
    ("concurrency: an ended lease frees a slot", {"L": _limiter(lease={"p": LIVE, "q": GONE})}, [], Rates(concurrent=2)),
    ("a dead process's reservations never refuse", {"A": _budget(held={f"d{i}": [20, 0, GONE] for i in range(8)})}, [("A", 100, None)], None),
    ("ended reservations given back, live ones kept", {"A": _budget(10, held={"x": [30, 0, GONE], "y": [50, 0, LIVE], "z": [5, 2, GONE]})}, [("A", 100, None)], None),
    ("several stale tenants leave", {"L": _limiter(ten={"old": [NOW - 1e6, NOW - 1e6], "old2": [NOW + 5.0, NOW - 5e5], "o": [NOW + 300.0, NOW - 5.0]})}, [], Rates(rpm=600)),
    ("at the window's edge a tenant stays, past it leaves", {"L": _limiter(ten={"edge": [NOW + 50.0, NOW - 1000.0], "past": [NOW + 50.0, NOW - 1000.5], "o": [NOW, NOW]})}, [], Rates(rpm=600)),
    ("the caller's own stale tenant starts again", {"L": _limiter(ten={"me": [NOW + 5000.0, NOW - 1e6], "o": [NOW, NOW - 5.0]})}, [], Rates(rpm=600)),
    ("the caller's own tenant and others stale", {"L": _limiter(ten={"me": [NOW + 5000.0, NOW - 2e6], "x": [NOW, NOW - 1e6], "o": [NOW + 10.0, NOW - 5.0]})}, [], Rates(rpm=600, burst=2)),
    ("the caller's own tenant live and ahead: wait", {"L": _limiter(ten={"me": [NOW + 5000.0, NOW - 5.0], "x": [NOW, NOW - 1e6]})}, [], Rates(rpm=600)),
    ("waiting still drops stale tenants and ended leases", {"L": _limiter(tat=NOW + 5000.0, ten={"x": [NOW, NOW - 1e6], "o": [NOW, NOW - 5.0]}, lease={"p": GONE, "q": LIVE})}, [], Rates(rpm=60, concurrent=5)),
    ("ended leases of a dead process free their slots", {"L": _limiter(lease={"p": GONE, "q": GONE, "r": LIVE})}, [], Rates(concurrent=2)),
    ("rates without requests: tenants untouched", {"L": _limiter(ten={"x": [NOW, NOW - 1e6]}, lease={"p": GONE})}, [], Rates(tpm=10**6, concurrent=3)),
    ("held off after a 429", {"L": _limiter(hold=NOW + 3000.0)}, [], Rates(rpm=60)),
    ("budget refuses: the limiter is untouched", {"A": _budget(ut=100), "L": _limiter()}, [("A", 100, None)], Rates(rpm=60, concurrent=1)),
    ("limiter waits: the budgets are untouched", {"A": _budget(ut=10), "L": _limiter(tat=NOW + 5000.0)}, [("A", 100, None)], Rates(rpm=60)),
    ("both admit: reservation and turn together", {"A": _budget(ut=10), "L": _limiter(tat=NOW - 1.0)}, [("A", 100, 10**9)], Rates(rpm=60, tpm=10**6, concurrent=3)),
    ("several budgets, one never written", {"A": _budget(5, 5), "B": None}, [("A", 1000, 1000), ("B", 100, None)], None),
    ("several budgets and the limiter, two never written", {"A": None, "B": _budget(1, 6), "L": None}, [("A", 1000, None), ("B", None, 500)], Rates(rpm=60, concurrent=2)),
    ("nanos near 2**53: just below the limit", {"A": _budget(0, 2**53 - 1)}, [("A", None, 2**53)], None),
    ("nanos near 2**53: at the limit", {"A": _budget(0, 2**53 + 1, held={"x": [0, 2, LIVE]})}, [("A", None, 2**53 + 3)], None),
    ("the caller's own tenant at the window's edge stays", {"L": _limiter(ten={"me": [NOW + 50.0, NOW - 1000.0], "o": [NOW, NOW]})}, [], Rates(rpm=600)),
]  # fmt: skip


async def _setup(
    store: BaseStore, case: dict[str, rules.Doc | None]
) -> tuple[UsageBackend, dict[str, str]]:
    backend = usage_backend(store)
    assert isinstance(backend, (PgUsage, DocsUsage))
    run = uuid.uuid4().hex[:8]
    names = {short: f"case:{run}:{short}" for short in case}
    for short, doc in case.items():
        if doc is not None:
            await _docs(backend).write(names[short], doc)
    return backend, names


def _docs(backend: UsageBackend) -> Any:
    """The SQL documents (:class:`~agentscope_teams.usage.sql_docs.SqlDocs`) of ``backend``."""
    return backend.docs  # type: ignore[attr-defined]


async def _stored(backend: UsageBackend, name: str) -> rules.Doc | None:
    """The document as stored (head and rows); a limiter's counts checked against its rows."""
    doc = await backend.read(name)
    if doc is not None and "ten" in doc:
        assert doc.pop("nten", 0) == len(doc["ten"]), doc
        assert doc.pop("nlease", 0) == len(doc["lease"]), doc
    return doc


def _normal(doc: rules.Doc | None, limiter: bool) -> Any:
    """A document as the rules would see it at NOW (defaults filled in, ended reservations
    taken off), numbers as floats."""
    if limiter:
        d = rules._limiter(doc)
        return {**d, "tat": float(d["tat"]), "ttat": float(d["ttat"]), "hold": float(d["hold"])}
    d = rules._budget(json.loads(json.dumps(doc)) if doc else None)
    rules._reap(d, NOW)
    return d


def _same(a: Any, b: Any) -> bool:
    """Equal documents, numbers to a millionth of a millisecond."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) <= 1e-6
    return bool(a == b)


def _admission(
    names: dict[str, str], limits: list[tuple[str, int | None, int | None]], rates: Rates | None
) -> Admission:
    budgets = tuple(Limit(names[s], t, n) for s, t, n in limits)
    key = names.get("L") if rates is not None else None
    return Admission(budgets, "call1", 120, 7, key, rates or Rates(), "me")


async def _admit(backend: UsageBackend, a: Admission, now: int) -> rules.Admitted:
    if isinstance(backend, PgUsage):
        return await backend.admit_at(a, now)
    return await backend.admit(a)  # at the time _at_now set


async def _finish(backend: UsageBackend, a: Admission, tokens: int, nanos: int, now: int) -> None:
    if isinstance(backend, PgUsage):
        await backend.finish_at(a, tokens, nanos, now)
    else:
        await backend.finish(a, tokens, nanos)


async def _give_back(backend: UsageBackend, a: Admission, now: int) -> None:
    if isinstance(backend, PgUsage):
        await backend.finish_at(a, 0, 0, now, unsent=True)
    else:
        await backend.give_back(a)


def _at_now(monkeypatch: pytest.MonkeyPatch, now: int) -> None:
    """The document backends' clock (MariaDB, SQLite) at ``now``."""
    monkeypatch.setattr(usage_backends, "now_ms", lambda: now)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
async def test_the_admit_statement_agrees_with_the_rules(
    store: BaseStore, case: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, before, limits, rates = case
    backend, names = await _setup(store, before)
    _at_now(monkeypatch, NOW)
    a = _admission(names, limits, rates)
    expected_docs, expected = rules.admit({names[s]: d for s, d in before.items()}, a, NOW)
    got = await _admit(backend, a, NOW)
    assert got.refusal == expected.refusal
    assert got.wait_ms == pytest.approx(expected.wait_ms)
    for short, name in names.items():
        want = expected_docs.get(name, before[short])
        stored = await _stored(backend, name)
        got_doc, want_doc = _normal(stored, short == "L"), _normal(want, short == "L")
        assert _same(got_doc, want_doc), (short, got_doc, want_doc)


#: A reservation row keeps its tokens and nano-dollars as doubles (``usage_entry.a``/``b``), so
#: one above 2**53 is given back rounded and the budget's ``rn`` stays off by the rounding.
ROUNDED = pytest.mark.xfail(
    strict=True, reason="reservation amounts above 2**53 are stored rounded (double columns)"
)
FINISHES: list[Any] = [
    ("settle what the call used", {"A": _budget(10, 3, held={"call1": [120, 7, LIVE], "y": [5, 0, LIVE]})}, None, (40, 2)),
    ("release a failed call", {"A": _budget(10, 3, held={"call1": [120, 7, LIVE]})}, None, (0, 0)),
    ("end the lease, correct the token clock", {"A": _budget(held={"call1": [120, 7, LIVE]}), "L": _limiter(ttat=NOW + 500.0, lease={"call1": LIVE, "z": LIVE})}, Rates(tpm=60000, concurrent=4), (40, 2)),
    ("a token clock never goes before now", {"L": _limiter(ttat=NOW + 5.0, lease={"call1": LIVE})}, Rates(tpm=60000, concurrent=4), (1, 0)),
    ("finished twice: the use counts again, nothing held is taken off", {"A": _budget(50, 9, held={"y": [5, 0, LIVE]}), "L": _limiter(ttat=NOW + 500.0, lease={"z": LIVE})}, Rates(tpm=60000, concurrent=4), (40, 2)),
    ("limits changed since the admission: no token or concurrency limit now", {"A": _budget(held={"call1": [120, 7, LIVE]}), "L": _limiter(ttat=NOW + 500.0, lease={"call1": LIVE})}, Rates(rpm=60), (40, 2)),
    pytest.param(("nanos near 2**53", {"A": _budget(0, 2**53, held={"call1": [120, 2**53 + 1, LIVE]})}, None, (40, 2**53 + 3)), marks=ROUNDED),
]  # fmt: skip


def _case_id(case: Any) -> str:
    """A case's name (the first field; a ``pytest.param`` holds the case as its value)."""
    return str(case.values[0][0] if hasattr(case, "values") else case[0])


@pytest.mark.parametrize("case", FINISHES, ids=[_case_id(c) for c in FINISHES])
async def test_the_finish_statement_agrees_with_the_rules(
    store: BaseStore, case: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, before, rates, (tokens, nanos) = case
    backend, names = await _setup(store, before)
    _at_now(monkeypatch, NOW)
    limits = [(s, 10**6, None) for s in before if s != "L"]
    a = _admission(names, limits, rates)
    expected_docs = rules.finish({names[s]: d for s, d in before.items()}, a, tokens, nanos, NOW)
    await _finish(backend, a, tokens, nanos, NOW)
    for short, name in names.items():
        stored = await _stored(backend, name)
        want = expected_docs[name]
        got_doc, want_doc = _normal(stored, short == "L"), _normal(want, short == "L")
        assert _same(got_doc, want_doc), (short, got_doc, want_doc)


#: The turn "call1" took moved tat by 1000, its tenant's by 2000 and ttat by 50 ms.
TOOK = ["call1", 1000.0, 2000.0, 50.0]
TURNED = {
    "tat": NOW + 1000.0,
    "ttat": NOW + 50.0,
    "ten": {"me": [NOW + 2000.0, NOW], "o": [NOW, NOW]},
}
GIVE_BACKS: list[tuple[str, dict[str, rules.Doc | None]]] = [
    ("its turn is the last one: undone", {"A": _budget(held={"call1": [120, 7, LIVE]}), "L": _limiter(**TURNED, last=TOOK, lease={"call1": LIVE})}),
    ("another turn came after it: unchanged", {"L": _limiter(**TURNED, last=["other", 1000.0, 0.0, 50.0], lease={"call1": LIVE})}),
    ("its tenant was forgotten since: the clocks undone", {"L": _limiter(tat=NOW + 1000.0, ttat=NOW + 50.0, last=TOOK)}),
    ("no turn noted", {"L": _limiter(tat=NOW + 1000.0)}),
    ("after its finish: the turn is still undone", {"A": _budget(40, 2), "L": _limiter(**TURNED, last=TOOK)}),
]  # fmt: skip


@pytest.mark.parametrize("case", GIVE_BACKS, ids=[c[0] for c in GIVE_BACKS])
async def test_the_give_back_statement_agrees_with_the_rules(
    store: BaseStore, case: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, before = case
    backend, names = await _setup(store, before)
    _at_now(monkeypatch, NOW)
    limits = [(s, 10**6, None) for s in before if s != "L"]
    a = _admission(names, limits, Rates(rpm=60, tpm=60000, concurrent=4))
    expected_docs = rules.give_back({names[s]: d for s, d in before.items()}, a, NOW)
    await _give_back(backend, a, NOW)
    for short, name in names.items():
        stored = await _stored(backend, name)
        got_doc, want_doc = (
            _normal(stored, short == "L"),
            _normal(expected_docs[name], short == "L"),
        )
        assert _same(got_doc, want_doc), (short, got_doc, want_doc)
    assert ("last" in expected_docs[names["L"]]) == (before["L"].get("last") not in (None, TOOK))


async def test_an_admit_then_its_give_back_agree_with_the_rules(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn the statement notes is the one its give-back undoes, as in the rules."""
    before: dict[str, rules.Doc | None] = {"L": _limiter(tat=NOW - 10.0, ttat=NOW + 5.0)}
    backend, names = await _setup(store, before)
    a = _admission(names, [], Rates(rpm=60, tpm=60000, concurrent=4))
    docs, _ = rules.admit({names["L"]: before["L"]}, a, NOW)
    _at_now(monkeypatch, NOW)
    await _admit(backend, a, NOW)
    assert _same(_normal(await _stored(backend, names["L"]), True), _normal(docs[names["L"]], True))
    docs = rules.give_back(docs, a, NOW + 1)
    _at_now(monkeypatch, NOW + 1)
    await _give_back(backend, a, NOW + 1)
    got = _normal(await _stored(backend, names["L"]), True)
    assert _same(got, _normal(docs[names["L"]], True))
    assert got["tat"] == pytest.approx(NOW) and got["ttat"] == pytest.approx(NOW + 5.0)
    assert "last" not in got and got["lease"] == {}
