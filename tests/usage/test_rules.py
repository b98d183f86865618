"""The rules of budgets and rate limits (:mod:`agentscope_teams.usage.rules`), on a simulated clock:
the same rules every memory, file and SQL store runs (Redis runs their Lua twin, tested end to end
in test_shared_limits.py)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from agentscope_teams.usage import rules
from agentscope_teams.usage.rules import Limit, Rates


def _simulate(tenants: dict[str, int], rates: Rates, seconds: float) -> Counter[str]:
    """Waiters (per tenant) that ask again when told, and call again at once when granted."""
    doc: rules.Doc | None = None
    next_ask = {(t, i): 0.0 for t, n in tenants.items() for i in range(n)}
    granted: Counter[str] = Counter()
    now = 0.0
    while now < seconds * 1000:
        for (t, i), at in sorted(next_ask.items(), key=lambda kv: kv[1]):
            if at > now:
                continue
            doc, wait = rules.acquire(doc, rates, now, t, 10, f"{t}{i}{now}")
            if wait > 0:
                next_ask[(t, i)] = now + wait
            else:
                granted[t] += 1
                next_ask[(t, i)] = now + 1  # the call takes 1 ms, then it asks again
        now += 1
    return granted


def test_requests_per_minute_are_kept_exactly() -> None:
    granted = _simulate({"a": 5}, Rates(rpm=60), 30)
    assert granted["a"] == 30


def test_two_tenants_share_fairly_whatever_their_number_of_callers() -> None:
    granted = _simulate({"noisy": 6, "quiet": 1}, Rates(rpm=600), 30)
    total = granted["noisy"] + granted["quiet"]
    assert abs(total - 300) <= 2  # the global limit holds
    assert granted["quiet"] >= 0.45 * total, granted


def test_without_tenants_the_many_callers_take_most_turns() -> None:
    """The control: the same callers all in one tenant get turns first come, first served."""
    doc: rules.Doc | None = None
    next_ask = {i: 0.0 for i in range(7)}
    granted: Counter[int] = Counter()
    for now in range(30_000):
        for i, at in sorted(next_ask.items(), key=lambda kv: kv[1]):
            if at <= now:
                doc, wait = rules.acquire(doc, Rates(rpm=600), float(now), "one", 10, str(i))
                next_ask[i] = now + (wait if wait > 0 else 1)
                granted[i] += wait <= 0
    assert granted[6] < 0.3 * sum(granted.values())


def test_concurrent_calls_are_capped_and_a_lease_frees_a_slot() -> None:
    rates = Rates(concurrent=2)
    doc, w1 = rules.acquire(None, rates, 0.0, "t", 1, "a")
    doc, w2 = rules.acquire(doc, rates, 0.0, "t", 1, "b")
    doc, w3 = rules.acquire(doc, rates, 0.0, "t", 1, "c")
    assert (w1, w2) == (0.0, 0.0) and w3 > 0
    doc = rules.release(doc, rates, 1.0, "a", 0)
    doc, w4 = rules.acquire(doc, rates, 1.0, "t", 1, "c")
    assert w4 == 0.0


def test_tokens_per_minute_wait_for_the_bucket_and_are_corrected_by_use() -> None:
    rates = Rates(tpm=6000)  # 100 tokens a second, a bucket of 10 s
    doc, wait = rules.acquire(None, rates, 0.0, "t", 1000, "a")
    assert wait == 0.0
    doc, wait = rules.acquire(doc, rates, 0.0, "t", 1000, "b")
    assert wait == 10_000  # the bucket holds 10 s of tokens and 1000 are already 10 s ahead
    doc = rules.release(doc, rates, 0.0, "a", -900)  # it used 100 tokens, not 1000
    doc, wait = rules.acquire(doc, rates, 0.0, "t", 1000, "b")
    assert wait == 1000  # only the 100 tokens really used (1 s) are ahead now


def test_a_hold_off_stops_every_turn_until_it_ends() -> None:
    doc = rules.hold_off(None, 0.0, 2000)
    doc, wait = rules.acquire(doc, Rates(rpm=6000), 10.0, "t", 1, "a")
    assert wait == 1990
    doc, wait = rules.acquire(doc, Rates(rpm=6000), 2000.0, "t", 1, "a")
    assert wait == 0.0


def test_a_budget_admits_calls_while_something_is_left_then_names_itself() -> None:
    limits = [Limit("team:t", 250, None), Limit("session:s", None, None)]
    docs: dict[str, rules.Doc | None] = {"team:t": None, "session:s": None}
    for rid in ("a", "b", "c"):
        new, refusal = rules.reserve(docs, limits, rid, 100, 0, 0)
        assert refusal is None
        docs = dict(new)
    new, refusal = rules.reserve(docs, limits, "d", 100, 0, 0)
    assert refusal == rules.Refusal("team:t", "tokens", 250, 300, 0)
    # nothing of the refused call was reserved anywhere
    assert new["session:s"]["rt"] == 300 and "d" not in new["session:s"]["res"]
    docs = dict(rules.settle(dict(new), "a", 80, 0))
    assert docs["team:t"]["ut"] == 80 and docs["team:t"]["rt"] == 200


def test_a_reservation_whose_process_died_expires() -> None:
    limits = [Limit("team:t", 100, None)]
    new, _ = rules.reserve({"team:t": None}, limits, "dead", 100, 0, 0)
    _, refusal = rules.reserve(dict(new), limits, "x", 10, 0, 1)
    assert refusal is not None
    later = rules.RESERVATION_TTL_MS + 1
    new, refusal = rules.reserve(dict(new), limits, "x", 10, 0, later)
    assert refusal is None and new["team:t"]["rt"] == 10


MAPS = ("res", "ten", "lease")
NOW = 1_000_000


def _hit(field: str, key: str, entry: Any, test: str, value: float | str) -> bool:
    if test == "=":
        return key == value
    at = entry if field == "lease" else entry[1] if field == "ten" else entry[2]
    return bool(at <= value) if test == "<=" else bool(at < value)


def _part(docs: dict[str, rules.Doc], wanted: rules.Wanted) -> dict[str, rules.Doc | None]:
    """``docs`` as a store of rows gives them to the rules: the rest of each document (counts
    included), and of its maps only the entries ``wanted`` names."""
    out: dict[str, rules.Doc | None] = {}
    for name, doc in docs.items():
        part = {k: v for k, v in doc.items() if k not in MAPS} | {m: {} for m in MAPS if m in doc}
        for field, test, value in wanted(name, part):
            for key, entry in doc[field].items():
                if _hit(field, key, entry, test, value):
                    part[field][key] = entry
        out[name] = part
    return out


def _whole() -> dict[str, rules.Doc]:
    res = {f"r{i}": [10, 1, NOW + (-5 if i % 3 == 0 else 60_000)] for i in range(40)}
    res["call1"] = [120, 7, NOW + 900_000]
    ten = {f"t{i}": [NOW + 100.0 * i, NOW - (10.0**6 if i % 4 == 0 else 5.0)] for i in range(50)}
    ten["me"] = [NOW + 1000.0, NOW - 10.0]
    lease = {f"l{i}": NOW + (-1.0 if i % 2 else 9e5) for i in range(30)}
    lease["call1"] = NOW + 9e5
    rt, rn = sum(v[0] for v in res.values()), sum(v[1] for v in res.values())
    budget = {"ut": 5, "un": 0, "rt": rt, "rn": rn, "res": res}
    limiter = {"tat": NOW - 10.0, "ttat": NOW + 5.0, "hold": 0.0, "ten": ten, "lease": lease}
    limiter |= {"nten": len(ten), "nlease": len(lease), "last": ["call1", 100.0, 200.0, 5.0]}
    return {"B": budget, "L": limiter}


def _steps(a: rules.Admission) -> list[tuple[Any, rules.Wanted]]:
    new = a._replace(rid="new")
    return [
        (lambda d: rules.admit(d, new, NOW), rules.admit_wants(new, NOW)),
        (lambda d: (rules.finish(d, a, 40, 2, NOW), None), rules.finish_wants(a)),
        (lambda d: (rules.give_back(d, a, NOW), None), rules.finish_wants(a, unsent=True)),
    ]


def test_the_rules_decide_the_same_on_the_entries_a_step_names() -> None:
    """A store keeping the maps as rows gives the rules the counts and only the entries a step
    names (:func:`rules.admit_wants`, :func:`rules.finish_wants`): the same answer, the same
    totals, clocks and counts, and the same entries changed, as on the whole documents (stale
    tenants, expired reservations and leases and the caller's own tenant among them); the whole
    documents change no entry the step did not name."""
    for rates in (
        Rates(rpm=600, tpm=10**6, concurrent=10),
        Rates(rpm=60, burst=4, concurrent=20),
        Rates(rpm=600, burst=2),
        Rates(tpm=10**6, concurrent=10),
        Rates(),
    ):
        a = rules.Admission((Limit("B", 10**6, None),), "call1", 120, 7, "L", rates, "me")
        for step, wanted in _steps(a):
            named = _part(_whole(), wanted)
            full, full_answer = step(_whole())
            part, part_answer = step(_part(_whole(), wanted))
            assert part_answer == full_answer
            for name in ("B", "L"):
                norm = rules._limiter if name == "L" else rules._budget
                # a document a step does not write stays as it was
                got = norm(part.get(name, named[name]))
                want = norm(full.get(name, _whole()[name]))
                assert {k: v for k, v in got.items() if k not in MAPS} == {
                    k: v for k, v in want.items() if k not in MAPS
                }
                for field in (m for m in MAPS if m in got):
                    keys = set(named[name][field]) | set(got[field])  # type: ignore[index]
                    assert {k: got[field].get(k) for k in keys} == {
                        k: want[field].get(k) for k in keys
                    }
                    untouched = {k: v for k, v in _whole()[name][field].items() if k not in keys}
                    assert {k: v for k, v in want[field].items() if k not in keys} == untouched
