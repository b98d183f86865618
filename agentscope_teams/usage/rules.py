"""The rules of budgets and rate limits, on plain JSON documents: one home for both.

The memory, file and SQL backends (:mod:`.docs`) lock the documents a call touches, run one of these
functions on them and write them back, all in one atomic step; Redis runs the same rules as Lua
scripts (:mod:`.redis_lua`), PostgreSQL :func:`admit`, :func:`finish` and :func:`give_back` as one
SQL statement each (:mod:`.sql_pg`, given the constants below; tests/usage/test_pg_agreement.py
holds them to these functions). Times are milliseconds, money is integer nano-dollars.

**Budget document** (one per budget): ``ut``/``un`` used tokens / nano-dollars, ``rt``/``rn``
reserved by calls in flight, ``res`` the reservations (id -> [tokens, nanos, expiry]). A call is
admitted while ``used + reserved`` is below the limit of every budget it draws on, and then
reserves its maximum on all of them; so a budget is overshot by at most one call.

**Limiter document** (one per provider, model and key hash): GCRA theoretical arrival times for
requests (``tat``) and tokens (``ttat``), one per active tenant (``ten``: tenant -> [tat, seen]),
the leases of calls in flight (``lease``: id -> expiry) for the concurrency limit, ``hold``:
no turn before this time (a provider answered 429 with ``Retry-After``), ``last``: the last turn
taken and what it moved the clocks by (so an admission never sent can give its turn back), and
``nten``/``nlease``: how many tenants and leases it holds (:data:`COUNTS`; counted from the maps
when absent, as in documents written before them).

**What has ended counts for nothing.** A reservation or lease past its expiry (its process died:
:data:`RESERVATION_TTL_MS`) and, with a requests limit, a tenant not seen within its window
(:func:`tenant_window`) are dropped before every decision (:func:`reserve`, :func:`acquire`). A
call still in flight renews its reservation and lease every third of that time (:func:`renew`),
so only a dead process's call ends that way.

**A step reads few entries.** The rules read a map only for the entries that ended, the caller's
own and the counts, so a store may give them just those (:data:`Wanted`: :func:`admit_wants`,
:func:`finish_wants`) and the same decisions follow: the SQL stores keep the maps as rows
(:mod:`.rows`) and read those only, so a step costs the same with 1 or 1,000 calls in flight; the
Redis scripts keep per hash the earliest expiry, the oldest ``seen`` and the counts and read a hash
whole only when something in it may have ended (:mod:`.redis_lua`). The memory and file backends
keep whole documents (without the counts, as before them).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

Doc = dict[str, Any]
#: What a step reads of a document's maps, for a store that keeps them apart from the rest
#: (:mod:`.sql_docs`): for a document's name and the rest of it (None: never written), probes
#: ``(map, test, value)``: test ``"="`` the entry named ``value``, ``"<="`` / ``"<"`` the entries
#: whose expiry (a tenant: time last seen) is at most / below ``value``. The rules decide on those
#: entries and the document's counts (``nten``, ``nlease``) as they do on every entry.
Wanted = Callable[[str, Doc | None], list[tuple[str, str, float | str]]]

#: A reservation or lease whose call never settles (its process died) ends after this long.
RESERVATION_TTL_MS = 15 * 60 * 1000


@dataclass(frozen=True, init=False)
class Limit:
    """One budget as a call applies it: its name and limits (None: no limit in that unit)."""

    name: str
    max_tokens: int | None
    max_nanos: int | None

    def __init__(self, name: str, max_tokens: int | None, max_nanos: int | None) -> None:
        d = self.__dict__  # frozen: a model call makes these, so not through object.__setattr__
        d["name"], d["max_tokens"], d["max_nanos"] = name, max_tokens, max_nanos


@dataclass(frozen=True)
class Refusal:
    """Why a reservation was refused: the budget, its unit, limit, use (settled + in flight) and
    settled use alone (below the limit: calls in flight hold the rest, so waiting may help)."""

    name: str
    unit: str
    limit: int
    used: int
    settled: int


def _budget(doc: Doc | None) -> Doc:
    base: Doc = {"ut": 0, "un": 0, "rt": 0, "rn": 0, "res": {}}
    if doc:
        base.update(doc)
        base["res"] = dict(base["res"])  # the caller's document stays as it was
    return base


def _reap(doc: Doc, now: int) -> None:
    for rid, (t, n, exp) in list(doc["res"].items()):
        if exp <= now:
            del doc["res"][rid]
            doc["rt"] -= t
            doc["rn"] -= n


def reserve(
    docs: dict[str, Doc | None],
    limits: list[Limit],
    rid: str,
    tokens: int,
    nanos: int,
    now: int,
) -> tuple[dict[str, Doc], Refusal | None]:
    """Reserve ``tokens`` and ``nanos`` on every budget of ``limits``, or on none (a refusal)."""
    out = {name: _budget(doc) for name, doc in docs.items()}
    for lim in limits:
        doc = out[lim.name]
        _reap(doc, now)
        counted = {  # a budget's units: tokens, and USD in billionths ("nanos")
            "tokens": (lim.max_tokens, doc["ut"], doc["rt"]),
            "nanos": (lim.max_nanos, doc["un"], doc["rn"]),
        }
        for unit, (cap, settled, held) in counted.items():
            if cap is not None and settled + held >= cap:
                return out, Refusal(lim.name, unit, cap, settled + held, settled)
    for lim in limits:
        doc = out[lim.name]
        doc["rt"] += tokens
        doc["rn"] += nanos
        doc["res"][rid] = [tokens, nanos, now + RESERVATION_TTL_MS]
    return out, None


def settle(docs: dict[str, Doc | None], rid: str, tokens: int, nanos: int) -> dict[str, Doc]:
    """End reservation ``rid`` on each budget and count what the call used (0 and 0: release)."""
    out = {name: _budget(doc) for name, doc in docs.items()}
    for doc in out.values():
        held = doc["res"].pop(rid, None)
        if held is not None:
            doc["rt"] -= held[0]
            doc["rn"] -= held[1]
        doc["ut"] += tokens
        doc["un"] += nanos
    return out


@dataclass(frozen=True)
class Rates:
    """A limiter's limits as the rules read them (None: no limit of that kind)."""

    rpm: float | None = None
    tpm: float | None = None
    concurrent: int | None = None
    burst: int = 1


#: A limiter's counts of its tenants and leases (kept beside the maps: a store may give the rules
#: only the entries a step needs, :data:`Wanted`).
COUNTS = {"ten": "nten", "lease": "nlease"}


def _limiter(doc: Doc | None) -> Doc:
    base: Doc = {"tat": 0.0, "ttat": 0.0, "hold": 0.0, "ten": {}, "lease": {}}
    if doc:
        base.update(doc)
        base["ten"] = {name: list(v) for name, v in base["ten"].items()}
        base["lease"] = dict(base["lease"])
    for field, count in COUNTS.items():  # a whole document written without counts
        base.setdefault(count, len(base[field]))
    return base


def uncounted(doc: Doc) -> Doc:
    """``doc`` without the counts of its maps (a store of whole documents keeps the maps only)."""
    return {k: v for k, v in doc.items() if k not in COUNTS.values()}


def tenant_window(rates: Rates, tenants: int) -> float | None:
    """How long a tenant of a limiter with ``tenants`` of them stays active unseen (ms; None: no
    requests limit, no tenants)."""
    if not rates.rpm:
        return None
    interval = 60000.0 / rates.rpm
    return max(TENANT_WINDOW_MIN_MS, TENANT_WINDOW_INTERVALS * interval * max(tenants, 1))


#: Retry hint while every concurrent slot is taken (ms).
CONCURRENCY_POLL_MS = 50.0
#: A tenant not seen for this many of its share's intervals (at least the floor, ms) is forgotten.
TENANT_WINDOW_INTERVALS = 3
TENANT_WINDOW_MIN_MS = 1000.0
#: The token bucket holds this fraction of a minute's tokens (times the burst).
TOKEN_BUCKET_MINUTE_FRACTION = 6


def acquire(
    doc: Doc | None, rates: Rates, now: float, tenant: str, tokens: int, lease: str
) -> tuple[Doc, float]:
    """Take a turn: (new document, 0) when granted, else (document, ms to wait before asking again).

    GCRA for requests, per tenant with an interval scaled by the active tenants (the fair share),
    GCRA for tokens (a call larger than the bucket passes when the bucket is empty), and a count of
    leases for concurrency. Nothing but the tenant's ``seen`` time changes unless all three agree.
    """
    d = _limiter(doc)
    ten: dict[str, list[float]] = d["ten"]
    waits = [0.0, d["hold"] - now]
    window = tenant_window(rates, d["nten"])
    if rates.rpm and window is not None:
        interval = 60000.0 / rates.rpm
        for name, (_, seen) in list(ten.items()):
            if seen < now - window:
                del ten[name]
                d["nten"] -= 1
        if tenant not in ten:
            ten[tenant] = [0.0, now]
            d["nten"] += 1
        mine = ten[tenant]
        mine[1] = now
        tau = interval * (rates.burst - 1)
        share = interval * d["nten"]
        waits.append(max(d["tat"], now) - now - tau)
        waits.append(max(mine[0], now) - now - share * (rates.burst - 1))
    if rates.tpm:
        per_token = 60000.0 / rates.tpm
        cap = 60000.0 * rates.burst / TOKEN_BUCKET_MINUTE_FRACTION
        ahead = max(d["ttat"], now) - now
        if ahead > 0 and ahead + tokens * per_token > cap:
            waits.append(ahead + tokens * per_token - cap)
    leases: dict[str, float] = d["lease"]
    for lid, exp in list(leases.items()):
        if exp <= now:
            del leases[lid]
            d["nlease"] -= 1
    if rates.concurrent and d["nlease"] >= rates.concurrent:
        waits.append(CONCURRENCY_POLL_MS)
    wait = max(waits)
    if wait > 0:
        return d, wait
    _take(d, rates, now, tenant, tokens, lease)
    return d, 0.0


def _take(d: Doc, rates: Rates, now: float, tenant: str, tokens: int, lease: str) -> None:
    """Take the turn :func:`acquire` granted, noting it as ``last``: [lease, what ``tat``, the
    tenant's tat and ``ttat`` moved by] (what :func:`give_back` undoes)."""
    moved = [0.0, 0.0, 0.0]
    if rates.rpm:
        interval, mine = 60000.0 / rates.rpm, d["ten"][tenant]
        tat, own = max(d["tat"], now) + interval, max(mine[0], now) + interval * d["nten"]
        moved[0], moved[1] = tat - d["tat"], own - mine[0]
        d["tat"], mine[0] = tat, own
    if rates.tpm:
        ttat = max(d["ttat"], now) + tokens * 60000.0 / rates.tpm
        moved[2] = ttat - d["ttat"]
        d["ttat"] = ttat
    if rates.concurrent:
        d["nlease"] += lease not in d["lease"]
        d["lease"][lease] = now + RESERVATION_TTL_MS
    d["last"] = [lease, *moved]


def release(doc: Doc | None, rates: Rates, now: float, lease: str, token_delta: int) -> Doc:
    """End lease ``lease`` and correct the token clock by what the call used beyond (or below) its
    estimate (``token_delta`` = used - estimated)."""
    d = _limiter(doc)
    if d["lease"].pop(lease, None) is not None:
        d["nlease"] -= 1
    if rates.tpm and token_delta:
        d["ttat"] = max(d["ttat"] + token_delta * 60000.0 / rates.tpm, now)
    return d


def undo_turn(doc: Doc | None, lease: str, tenant: str) -> Doc:
    """Undo the turn taken as ``lease`` (by ``tenant``) if it is still the last one taken: ``tat``,
    the tenant's tat and ``ttat`` move back by what that turn moved them; else change nothing."""
    d = _limiter(doc)
    last = d.get("last")
    if not last or last[0] != lease:
        return d
    del d["last"]
    d["tat"] -= last[1]
    if tenant in d["ten"]:
        d["ten"][tenant][0] -= last[2]
    d["ttat"] -= last[3]
    return d


def hold_off(doc: Doc | None, now: float, wait_ms: float) -> Doc:
    """A provider answered 429 anyway: no process takes a turn for ``wait_ms``."""
    d = _limiter(doc)
    d["hold"] = max(d["hold"], now + wait_ms)
    return d


#: The limits of a limiter with none set.
NO_RATES = Rates()


class Admission(NamedTuple):
    """What one model call asks of the store before it is sent: a reservation of ``tokens`` and
    ``nanos`` (id ``rid``, also the id of its rate-limit lease) on each budget of ``limits``, and a
    turn of the limiter ``key`` (None: no rate limit) as ``tenant``. Immutable (a tuple: one or
    two are made for every model call)."""

    limits: tuple[Limit, ...]
    rid: str
    tokens: int
    nanos: int
    key: str | None = None
    rates: Rates = NO_RATES
    tenant: str = "-"

    @property
    def names(self) -> list[str]:
        """Every document the admission reads: the budgets, then the limiter."""
        return [b.name for b in self.limits] + ([self.key] if self.key else [])


@dataclass(frozen=True)
class Admitted:
    """The answer to an :class:`Admission`: a budget's refusal, or ms to wait for a turn (0 and
    no refusal: the call holds its reservation and its turn)."""

    refusal: Refusal | None = None
    wait_ms: float = 0.0


#: The answer of a granted admission (shared: an :class:`Admitted` is immutable).
GRANTED = Admitted()


def admit(docs: dict[str, Doc | None], a: Admission, now: int) -> tuple[dict[str, Doc], Admitted]:
    """Reserve on every budget and take a turn, both or neither: a refused budget leaves the
    limiter untouched; a turn to wait for leaves the budgets untouched."""
    budget_docs = {b.name: docs[b.name] for b in a.limits}
    reserved, refusal = reserve(budget_docs, list(a.limits), a.rid, a.tokens, a.nanos, now)
    if refusal is not None:
        return reserved, Admitted(refusal=refusal)
    if a.key is None:
        return reserved, Admitted()
    limiter, wait = acquire(docs[a.key], a.rates, float(now), a.tenant, a.tokens, a.rid)
    if wait > 0:
        return {a.key: limiter}, Admitted(wait_ms=wait)
    return {**reserved, a.key: limiter}, Admitted()


def finish(
    docs: dict[str, Doc | None], a: Admission, tokens: int, nanos: int, now: int
) -> dict[str, Doc]:
    """After the call: settle its reservation with what it used (0 and 0: release it) and end its
    lease, correcting the token clock by the use beyond (or below) the estimate."""
    out = settle({b.name: docs[b.name] for b in a.limits}, a.rid, tokens, nanos)
    if a.key is not None:
        delta = tokens - a.tokens if tokens else 0
        out[a.key] = release(docs[a.key], a.rates, float(now), a.rid, delta)
    return out


def renew(docs: dict[str, Doc | None], a: Admission, now: int) -> dict[str, Doc]:
    """A call still in flight: its reservation on each budget and its lease now end
    :data:`RESERVATION_TTL_MS` from ``now`` (else a call longer than that would count as ended:
    others admitted as if it held nothing). What it no longer holds (settled) stays ended."""
    out: dict[str, Doc] = {}
    for b in a.limits:
        doc = docs[b.name]
        if doc is not None and a.rid in doc.get("res", {}):
            budget = out[b.name] = _budget(doc)
            tokens, nanos, _ = budget["res"][a.rid]
            budget["res"][a.rid] = [tokens, nanos, now + RESERVATION_TTL_MS]
    doc = None if a.key is None else docs[a.key]
    if doc is not None and a.rid in doc.get("lease", {}):
        limiter = out[a.key] = _limiter(doc)  # type: ignore[index]
        limiter["lease"][a.rid] = now + RESERVATION_TTL_MS
    return out


def give_back(docs: dict[str, Doc | None], a: Admission, now: int) -> dict[str, Doc]:
    """Release an admission whose request was never sent: its reservation and lease end as after
    :func:`finish` with nothing used, and its rate-limit turn is undone if no turn was taken since
    (:func:`undo_turn`). Exact: the clocks are as if that turn had not been taken (its tenant stays
    among the active ones); when another turn came after it nothing is given back (the limiter errs
    slow, never lets more requests or tokens through than its rates)."""
    out = finish(docs, a, 0, 0, now)
    if a.key is not None:
        out[a.key] = undo_turn(out[a.key], a.rid, a.tenant)
    return out


def admit_wants(a: Admission, now: int) -> Wanted:
    """The entries :func:`admit` reads at ``now`` beyond the counts: a budget's ended reservations,
    the limiter's ended leases and, with a requests limit, its tenants not seen within the window
    and the caller's own tenant (ended ones are dropped, the caller's tenant is taken a turn by)."""

    def wanted(name: str, head: Doc | None) -> list[tuple[str, str, float | str]]:
        if name != a.key:
            return [("res", "<=", now)]
        probes: list[tuple[str, str, float | str]] = [("lease", "<=", float(now))]
        window = tenant_window(a.rates, _limiter(head)["nten"])
        if window is not None:
            probes += [("ten", "=", a.tenant), ("ten", "<", now - window)]
        return probes

    return wanted


def finish_wants(a: Admission, unsent: bool = False) -> Wanted:
    """The entries :func:`finish` (``unsent``: :func:`give_back`) reads: the call's reservation
    on each budget, its lease and (given back) its tenant on the limiter."""

    def wanted(name: str, head: Doc | None) -> list[tuple[str, str, float | str]]:
        if name != a.key:
            return [("res", "=", a.rid)]
        probes: list[tuple[str, str, float | str]] = [("lease", "=", a.rid)]
        return [*probes, ("ten", "=", a.tenant)] if unsent else probes

    return wanted
