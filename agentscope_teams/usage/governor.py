""":class:`UsageGovernor`: budgets and shared rate limits around every model call.

A governor is bound to a caller (:meth:`UsageGovernor.bind`: the org, user and session budgets of a
:class:`~agentscope_teams.context.RuntimeContext`); subagent runs and team members add theirs with
:func:`add_budget` and name their tenant with :func:`tenant`. The agent loop wraps each model call in
:func:`model_call`, which, when a governor is bound (otherwise it costs one ``ContextVar.get``):

1. reserves the call's maximum (estimated input + max output tokens, and its price) on every budget
   that applies and takes a turn of the model's shared rate limit, if it has one, in one store
   operation per attempt (:mod:`.limiter`), or raises
   :class:`~agentscope_teams.errors.BudgetExceededError` (when calls in flight hold what is left,
   it waits for them first). The first call of a ``HarnessAgent.call`` usually finds that
   operation done: it was sent beside the session's lease and load with a reservation estimated
   before the load (:mod:`.early`), and is used if it covers the request's own estimate, else
   given back beside the call;
2. after the call settles what the provider reported (or an estimate, marked so) and ends the
   rate-limit lease, in one store operation; a failed call releases its reservation (one
   cancelled in flight counts its estimated prompt, which the provider read). That operation
   runs as a task of its own (:mod:`.settles`), beside what the caller does next (a tool step, a
   session save; on one Redis server the last one rides in the same socket write as the call's
   last save: :mod:`.settles`); ``HarnessAgent.call`` and ``ReActAgent.reply`` wait for their call's settles
   (:func:`settled`) before they return, and :meth:`UsageGovernor.aclose` (:func:`flush`) for every
   one left. Until a settle lands its reservation stays held.

A call with no budget and no rate limit does no store operation.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import contextvars
import functools
import itertools
import logging
import os
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, Self, cast

import anyio

from ..context import RuntimeContext
from ..errors import (
    BudgetExceededError,
    ConfigurationError,
    RateLimitError,
    RateLimitWaitError,
    StoreUnavailableError,
)
from ..model.base import ChatModel, ModelRequest, ModelResponse
from ..model.retries import RETRY_GATE, RetryGate
from ..tracing import metrics as _metrics
from ..tracing.usage import GOVERNANCE
from . import rules
from .backend import Rides, UsageBackend, known_backend, usage_backend
from .config import Budget, RateLimit, env_rate_limit
from .estimate import estimate_input, estimate_output
from .limiter import (
    Retries,
    admit,
    count_wait,
    hold_off,
    labels_of,
    limiter_key,
    rates_of,
    settle_of,
)
from .prices import Price, PriceBook, cost
from .rules import Admission, Limit, Rates, Refusal
from .settles import Later, Pending

if TYPE_CHECKING:
    from .early import Early

log = logging.getLogger(__name__)

#: Output tokens reserved for a request that does not set ``max_tokens``.
DEFAULT_MAX_OUTPUT = 4096
#: Budget kinds a governor applies from a RuntimeContext.
CONTEXT_SCOPES = ("org", "user", "session")
#: The early admission of the call running here (:mod:`.early`), for its first model call.
EARLY: contextvars.ContextVar[Early | None] = contextvars.ContextVar(
    "agentscope_teams_early_admission", default=None
)


class _Rids:
    """Reservation ids (made by :func:`new_admission`): a random prefix per process (new in a
    forked child) and a counter; unique as a uuid4 is, at a tenth of its cost."""

    def __init__(self) -> None:
        self.renew()

    def renew(self) -> None:
        self.prefix, self.count = os.urandom(12).hex(), itertools.count()


_RIDS = _Rids()
os.register_at_fork(after_in_child=_RIDS.renew)


class UsageGovernor:
    """Budgets and rate limits kept in ``store`` (memory, file, SQL or Redis).

    ``budgets`` maps a scope kind (``"org"``, ``"user"``, ``"session"``: one budget per org, user
    or session) or one named budget (``"org:acme"``, ``"team:t1"``) to a :class:`Budget`.
    ``rate_limits`` maps a model (``"openai:gpt-4o"``, ``"gpt-4o"``) or ``"*"`` to a
    :class:`RateLimit`; ``rate_limit`` is the ``"*"`` entry; the environment variable
    ``AGENTSCOPE_TEAMS_RATE_LIMIT`` gives it when neither does. ``prices`` overrides the price
    database per model. ``max_output_tokens`` is reserved for a request without ``max_tokens``
    whose model sets no default of its own (an ``AnthropicChatModel``'s ``max_tokens``).
    A call refused only because calls in flight hold what is left of a budget waits for them, up
    to ``budget_wait`` seconds; one refused because the settled use reached the limit fails.
    Closing it (:meth:`aclose`, ``async with``) waits for the settles of its store still running.
    """

    def __init__(
        self,
        store: Any,
        *,
        budgets: Mapping[str, Budget] | None = None,
        rate_limit: RateLimit | None = None,
        rate_limits: Mapping[str, RateLimit] | None = None,
        prices: Mapping[str, Price] | None = None,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT,
        budget_wait: float = 300.0,
    ) -> None:
        self.store = store
        self.budgets = {k: b for k, b in (budgets or {}).items() if b}
        limits = dict(rate_limits or {})
        default = rate_limit or limits.get("*") or env_rate_limit()
        if default is not None:
            limits["*"] = default
        #: Read-only: what a model call asks of the store is worked out once per model (:meth:`terms`).
        self.rate_limits: Mapping[str, RateLimit] = MappingProxyType(limits)
        self.prices = PriceBook(prices)
        self.max_output_tokens = max_output_tokens
        self.budget_wait = budget_wait
        self._terms: weakref.WeakKeyDictionary[ChatModel, Terms] = weakref.WeakKeyDictionary()
        #: The model asked about last (weakly) and its terms: most calls ask about the same again.
        self._last_model: Callable[[], ChatModel | None] = _nothing
        self._last_terms = cast("Terms", None)  # read once _last_model() returns a model

    @functools.cached_property
    def backend(self) -> UsageBackend:
        """The usage backend of the governor's store (one per store object: :func:`usage_backend`)."""
        return usage_backend(self.store)

    def context_budgets(self, ctx: RuntimeContext) -> list[tuple[str, Budget]]:
        """The budgets that apply to ``ctx``: per-kind ones and the named ones it matches."""
        if not self.budgets:
            return []
        org, user = ctx.org_id or "", ctx.user_id or ""
        within, user_in = _segment(org), _segment(user)
        names = {
            "org": f"org:{org}",
            "user": f"user:{within}/{user}",
            "session": f"session:{within}/{user_in}/{ctx.session_id}",
        }
        found = [(names[k], self.budgets[k]) for k in CONTEXT_SCOPES if k in self.budgets]
        found += [(n, self.budgets[n]) for n in names.values() if n in self.budgets]
        return found

    def rate_limit_for(self, model: ChatModel) -> RateLimit | None:
        """The limit of ``model``: by ``provider:model``, by model id, else ``"*"``."""
        provider = str(getattr(model, "provider", ""))
        name = model.model_name
        return (
            self.rate_limits.get(f"{provider}:{name}")
            or self.rate_limits.get(name)
            or self.rate_limits.get("*")
        )

    def terms(self, model: ChatModel) -> Terms:
        """What a call of ``model`` asks of the store besides its tokens: its rate limit, the
        limiter's key and rates, its price; worked out once per model object (its provider, name
        and API key are set when it is made; the governor's limits and prices when it is)."""
        if self._last_model() is model:
            return self._last_terms
        try:
            found = self._terms.get(model)
        except TypeError:  # a model that cannot be weakly referenced: worked out per call
            return _terms_of(self, model)
        if found is None:
            found = self._terms[model] = _terms_of(self, model)
        self._last_model, self._last_terms = weakref.ref(model), found
        return found

    def bind(self, ctx: RuntimeContext | None = None) -> _Using:
        """Govern the model calls of the block (with ``ctx``'s budgets); :func:`settled` waits for
        the settles of the block's calls (not for those of the block around it)."""
        return _Bound(self, ctx)

    async def aclose(self) -> None:
        """Wait for the settles of this governor's store still running (its usage counted, its
        reservations and leases given back); the store stays open (it is the caller's)."""
        await self.backend.settles.flush()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _nothing() -> None:
    return None


def _segment(an_id: str) -> str:
    """``an_id`` as a budget name's segment before a ``/``: its ``%`` and ``/`` escaped (ids may
    hold ``/``: else org ``a/b`` user ``c`` and org ``a`` user ``b/c`` would share one budget).
    An id without them is itself, so the budgets of such ids keep their names."""
    if "/" not in an_id and "%" not in an_id:
        return an_id
    return an_id.replace("%", "%25").replace("/", "%2F")


def governor_for(
    store: Any,
    usage: UsageGovernor | None,
    budget: Budget | None,
    rate_limit: RateLimit | None,
) -> UsageGovernor | None:
    """An agent's governor: ``usage`` itself, or one on ``store`` with ``budget`` per session and
    ``rate_limit`` for every model (None when nothing is set and the environment sets no limit)."""
    if usage is not None:
        if budget or rate_limit:
            raise ConfigurationError(
                "pass either usage= (a UsageGovernor) or budget= / rate_limit=, not both: "
                "give the governor the budgets and rate limits"
            )
        return usage
    if not budget and rate_limit is None and env_rate_limit() is None:
        return None
    budgets = {"session": budget} if budget else {}
    return UsageGovernor(store, budgets=budgets, rate_limit=rate_limit)


@dataclass(frozen=True, slots=True)
class Terms:
    """What every call of one model asks of a governor's store besides its tokens and price."""

    provider: str
    name: str
    limit: RateLimit | None
    #: The limiter's key (None: no rate limit) and the rates it applies.
    key: str | None
    rates: Rates
    #: The model's price (None: unknown) and its metric labels (provider, name).
    price: Price | None = None
    labels: tuple[str, str] = ("", "")
    #: Whether a turn counts requests or tokens per minute (an early one must be recent:
    #: :mod:`.early`).
    timed: bool = False
    #: The output tokens the model itself asks for when a request sets no ``max_tokens`` (its
    #: ``max_tokens``, e.g. ``AnthropicChatModel``'s; None: the model sets none).
    max_out: int | None = None


def _terms_of(gov: UsageGovernor, model: ChatModel) -> Terms:
    limit = gov.rate_limit_for(model)
    labels = provider, name = labels_of(model)
    price = gov.prices.price(provider, name)
    own = getattr(model, "max_tokens", None)
    max_out = own if isinstance(own, int) and own > 0 else None
    if limit is None:
        return Terms(provider, name, None, None, Rates(), price, labels, max_out=max_out)
    rates = rates_of(limit)
    timed = bool(rates.rpm or rates.tpm)
    key = limiter_key(model)
    return Terms(provider, name, limit, key, rates, price, labels, timed, max_out)


#: The limits of a scope's budgets as the store's rules read them, and whether one counts dollars.
_Plan = tuple[tuple[Limit, ...], bool]
_NO_PLAN: _Plan = ((), False)
#: Budget sets whose plan is kept (by value: a team member's every call binds the same budgets).
PLANS_KEPT = 1024
_PLANS: dict[tuple[tuple[str, Budget], ...], _Plan] = {}


def _plan_of(budgets: tuple[tuple[str, Budget], ...]) -> _Plan:
    """The limits of ``budgets`` as the store's rules read them, and whether one counts dollars."""
    if not budgets:
        return _NO_PLAN
    found = _PLANS.get(budgets)
    if found is None:
        limits = tuple([Limit(n, b.max_tokens, b.max_nanos) for n, b in budgets])
        found = limits, any(b.max_usd is not None for _, b in budgets)
        if len(_PLANS) >= PLANS_KEPT:
            _PLANS.clear()
        _PLANS[budgets] = found
    return found


class Scope(NamedTuple):
    """The governor and budgets in force, the tenant whose fair share calls draw on, the settles
    of the bound block's calls still running, and the budgets as the store's rules read them
    (:func:`_plan_of`). Immutable (a tuple: one is made per block)."""

    governor: UsageGovernor
    budgets: tuple[tuple[str, Budget], ...]
    tenant: str
    pending: Pending
    limits: tuple[Limit, ...] = ()
    #: Whether a budget counts dollars (then a call needs its model's price).
    usd: bool = False


class _Using(contextlib.ContextDecorator, abc.ABC):
    """The ``with`` block (or function decorator) of :meth:`UsageGovernor.bind`,
    :func:`add_budget` and :func:`tenant`: entering it puts the scope it makes in force (when it
    makes none, the block changes nothing) until it is left."""

    __slots__ = ("token",)

    token: contextvars.Token[Scope | None] | None

    @abc.abstractmethod
    def __enter__(self) -> None:
        """Make the block's scope and put it in force (``token``: None when none is made)."""

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.token is not None:
            SCOPE.reset(self.token)


class _Bound(_Using):
    """:meth:`UsageGovernor.bind`'s block: ``ctx``'s budgets added to those in force, and the
    tenant of ``ctx`` (the one in force if ``governor`` is bound already); settles of its own."""

    __slots__ = ("ctx", "governor")

    def __init__(self, governor: UsageGovernor, ctx: RuntimeContext | None) -> None:
        self.governor, self.ctx = governor, ctx

    def _recreate_cm(self) -> _Bound:  # a decorated function's calls: a block each
        return _Bound(self.governor, self.ctx)

    def __enter__(self) -> None:
        gov, ctx, scope = self.governor, self.ctx, SCOPE.get()
        if scope is not None and scope.governor is gov:
            name = scope.tenant
        else:
            name = f"{_segment(ctx.org_id or '')}/{ctx.user_id or ''}" if ctx is not None else "-"
        if ctx is not None and gov.budgets and (added := tuple(gov.context_budgets(ctx))):
            budgets = added if scope is None else _merge(scope.budgets, added)
            made = Scope(gov, budgets, name, Pending(), *_plan_of(budgets))
        elif scope is None:
            made = Scope(gov, (), name, Pending())
        else:
            made = Scope(gov, scope.budgets, name, Pending(), scope.limits, scope.usd)
        self.token = SCOPE.set(made)


class _Added(_Using):
    """:func:`add_budget`'s block."""

    __slots__ = ("budget", "name", "store")

    def __init__(self, name: str, budget: Budget | None, store: Any) -> None:
        self.name, self.budget, self.store = name, budget, store

    def _recreate_cm(self) -> _Added:
        return _Added(self.name, self.budget, self.store)

    def __enter__(self) -> None:
        scope, budget = SCOPE.get(), self.budget
        if not budget or (scope is None and self.store is None):
            self.token = None
            return
        if scope is None:
            scope = Scope(UsageGovernor(self.store), (), "-", Pending())
        merged = _merge(scope.budgets, ((self.name, budget),))
        made = Scope(scope.governor, merged, scope.tenant, scope.pending, *_plan_of(merged))
        self.token = SCOPE.set(made)


class _Tenant(_Using):
    """:func:`tenant`'s block."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def _recreate_cm(self) -> _Tenant:
        return _Tenant(self.name)

    def __enter__(self) -> None:
        scope = SCOPE.get()
        if scope is None:
            self.token = None
            return
        self.token = SCOPE.set(scope._replace(tenant=self.name))


def _merge(
    a: tuple[tuple[str, Budget], ...], b: tuple[tuple[str, Budget], ...]
) -> tuple[tuple[str, Budget], ...]:
    if not a:
        return b
    names = {n for n, _ in b}
    return tuple([x for x in a if x[0] not in names] + list(b))


#: :data:`GOVERNANCE` as this module sets it (a Scope or None; only :class:`_Using` sets it).
SCOPE = cast("contextvars.ContextVar[Scope | None]", GOVERNANCE)


def current_scope() -> Scope | None:
    """The scope in force here (None: no governor is bound)."""
    return SCOPE.get()


def add_budget(name: str, budget: Budget | None, *, store: Any = None) -> _Using:
    """Apply ``budget`` (named ``team:t1``, ``member:t1/alice``, ``run:<id>``, ...) to the model
    calls of the block, besides those already in force. Without a bound governor, one on
    ``store`` is bound (no store: nothing to enforce it with, so nothing happens)."""
    return _Added(name, budget, store)


def tenant(name: str) -> _Using:
    """Calls of the block share rate limits fairly as tenant ``name`` (a team id)."""
    return _Tenant(name)


def _warm(model: ChatModel) -> None:
    """Let ``model`` do its one-time lazy work (``warm()``, e.g.
    :meth:`~agentscope_teams.model.sdk_model.SdkChatModel.warm`) before its call takes a rate-limit
    turn: a request must reach the provider when the limiter placed it."""
    warm = getattr(model, "warm", None)
    if warm is not None:
        warm()


class ModelCall(Later):
    """One governed call (:func:`model_call`'s ``async with`` block): give it the response with
    :meth:`done`. Entering it admits the call; leaving it settles what the call used (a
    :class:`~.settles.Later` when that rides the call's next write: :meth:`_settle_soon`)."""

    __slots__ = (
        *("a", "early", "est_in", "model", "request", "response", "scope", "terms"),
        *("renewal", "rider", "rides", "sent", "used", "retries", "gate_token"),
    )

    #: Once it ended: what its settle sends and what it used, and the rider of a settle riding
    #: the call's next write, on ``rides``.
    sent: Admission
    used: tuple[int, int]
    rider: Any
    rides: Rides

    def __init__(self, scope: Scope, model: ChatModel, request: ModelRequest) -> None:
        self.scope, self.model, self.request = scope, model, request
        self.response: ModelResponse | None = None
        self.a: Admission | None = None
        #: The gate of the call's retries (a shared rate limit governs it) and its ContextVar token.
        self.retries: Retries | None = None
        self.gate_token: contextvars.Token[RetryGate | None] | None = None

    def done(self, response: ModelResponse) -> None:
        self.response = response

    async def __aenter__(self) -> ModelCall:
        scope, request = self.scope, self.request
        self.est_in = est_in = estimate_input(request)
        self.terms = terms = scope.governor.terms(self.model)
        if terms.limit is not None:
            _warm(self.model)
        self.early = early = EARLY.get()
        asked = asks(scope, terms, est_in, request.max_tokens)
        if asked is None:
            return self
        # admitted beside the session load (:mod:`.early`): no wait
        a = None if early is None else await early.take(scope, terms, *asked)
        if a is not None:
            if _metrics.METRICS is not None:
                count_wait(a, terms.labels, 0.0)
        else:
            a = new_admission(scope, terms, *asked)
            gov = scope.governor
            try:
                refusal = await admit(
                    gov.backend, a, terms.limit, gov.budget_wait, terms.labels, scope.pending.wait
                )
            except RateLimitWaitError:  # told to wait each time: it holds nothing
                raise
            except BaseException:  # cut short (cancelled, a reply lost): the ADMIT may have run
                await self._give_back(a)
                raise
            if refusal is not None:
                raise _refused(refusal)
        self.a = a
        self.renewal = Renewal.start(scope.governor.backend, a)
        if terms.limit is not None:  # its retries take turns of the limit (:mod:`..model.retries`)
            backend, model = scope.governor.backend, self.model
            self.retries = Retries(model, backend, a, terms.limit, terms.labels)
            self.gate_token = RETRY_GATE.set(self.retries)
        return self

    async def _give_back(self, a: Admission) -> None:
        """Give back what ``a``'s ``ADMIT``, cut short, may have taken (its reservation, lease and
        turn: :meth:`~.backend.UsageBackend.give_back`, harmless if it never ran), as a settle
        the scope's :func:`settled` waits for; in line where no task can be started."""
        backend = self.scope.governor.backend
        await backend.settles.beside(self.scope.pending, functools.partial(backend.give_back, a))

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        scope, a = self.scope, self.a
        if a is not None and self.renewal is not None:
            self.renewal.stop()
        if self.gate_token is not None:
            with contextlib.suppress(ValueError):  # left in another context than entered
                RETRY_GATE.reset(self.gate_token)
        retries = self.retries
        try:
            if a is not None and isinstance(e, RateLimitError) and not (retries and retries.held):
                try:
                    await hold_off(scope.governor.backend, a, self.terms.labels, e)
                except Exception as store_exc:  # the 429 is what the caller must see
                    log.warning("could not pause the shared rate limit: %s", store_exc)
        finally:
            response = self.response
            used = _finish(self.terms, response, self.est_in)
            if response is None and isinstance(e, anyio.get_cancelled_exc_class()):
                used = _prompt_read(self.terms, self.est_in)
            if self.early is not None:
                self.early.seen(scope, self.est_in, response)
            if a is not None:
                last = e is None and response is not None and not response.tool_calls
                if not self._settle_soon(a, used, last):  # no task to hand it to: in line
                    with anyio.CancelScope(shield=True):
                        await scope.governor.backend.settles.run(self._send)

    def _settle_soon(self, a: Admission, used: tuple[int, int], last: bool) -> bool:
        """Count what the call used on its budgets and end its rate-limit lease, in one store
        operation (none when neither needs it), as a task of its own (:mod:`.settles`) that the
        scope's :func:`settled` waits for; a store failure there is logged: the call is done.
        False: no task to hand it to (an event loop other than asyncio's).

        A ``last`` call (its answer ends the agent's loop: no tool step follows) queues its
        operation to ride the next write of the call (its session save; :class:`~.backend.Rides`)
        where the backend can: the settle is then landed when the scope's settles are waited for
        (this call is the :class:`~.settles.Later`)."""
        sent = settle_of(a)
        if sent is None:
            return True
        self.sent, self.used, scope = sent, used, self.scope
        backend = scope.governor.backend
        rides = backend.rides
        if last and rides is not None:
            self.rider = rides.ride_finish(sent, *used)
            if self.rider is not None:
                self.rides = rides
                backend.settles.defer(self, scope.pending)
                return True
        task = backend.settles.start(self._send)
        if task is None:
            return False
        scope.pending.add(task)
        return True

    async def _send(self) -> None:
        """The settle sent alone (a task, or in line); sent again, guarded, when its round trip
        failed and the backend can (:meth:`~.backend.Rides.finish_again`)."""
        backend = self.scope.governor.backend
        try:
            await backend.finish(self.sent, *self.used)
        except StoreUnavailableError:
            if backend.rides is None:
                raise
            await backend.rides.finish_again(self.sent, *self.used)
        if self.sent.limits:
            _count(self.scope, self.used)

    def ready(self) -> bool:
        rider = self.rider
        return bool(rider.done()) and not rider.lost  # a lost one is sent again: :meth:`settle`

    async def settle(self) -> None:
        try:
            await self.rides.landed(self.rider)
        except Exception:
            if not self.rider.lost:  # the server answered with an error: not sent again
                raise
            await self.rides.finish_again(self.sent, *self.used)
        if self.sent.limits:
            _count(self.scope, self.used)

    def now(self) -> None:
        self.rider.result()  # its error raised, as landing it would
        if self.sent.limits:
            _count(self.scope, self.used)


class Renewal:
    """Keeps a call's reservation and lease held while it runs longer than a third of
    :data:`.rules.RESERVATION_TTL_MS` (a long stream): renewed (:meth:`~.backend.UsageBackend.renew`)
    that often, by a timer (no task unless it fires), so other processes never count a call in
    flight as ended and admit past its budget or concurrency limit."""

    __slots__ = ("a", "backend", "handle", "loop", "stopped")

    def __init__(
        self, backend: UsageBackend, a: Admission, loop: asyncio.AbstractEventLoop
    ) -> None:
        self.backend, self.a, self.loop, self.stopped = backend, a, loop, False
        self.handle = loop.call_later(renew_after(), self._due)

    @classmethod
    def start(cls, backend: UsageBackend, a: Admission) -> Renewal | None:
        """A renewal of ``a`` (None: nothing to renew, or no asyncio loop runs)."""
        if not a.limits and not (a.key is not None and a.rates.concurrent):
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        return cls(backend, a, loop)

    def _due(self) -> None:
        # an empty context: no part of the call's trace span or riding block (it carries none)
        ctx = contextvars.Context()
        task = self.loop.create_task(self._renew(), name="renew model call", context=ctx)
        _RENEWING.add(task)
        task.add_done_callback(_RENEWING.discard)

    async def _renew(self) -> None:
        if self.stopped:
            return
        try:
            await self.backend.renew(self.a)
        except Exception as exc:  # the call goes on; its reservation may end meanwhile
            log.warning("could not renew the reservation of a model call in flight: %s", exc)
        if not self.stopped:
            self.handle = self.loop.call_later(renew_after(), self._due)

    def stop(self) -> None:
        self.stopped = True
        self.handle.cancel()


#: Renewals running (kept referenced until they end).
_RENEWING: set[asyncio.Task[None]] = set()


def renew_after() -> float:
    """Seconds between renewals of a call in flight: a third of the reservation's lifetime."""
    return rules.RESERVATION_TTL_MS / 3000


class Ungoverned:
    """The block of a model call (:func:`model_call`), or of a call's early admission
    (:func:`~.early.admit_early`), with no governor bound: a shared no-op whose ``__aexit__`` is
    a static method, so an ``async with`` holds that function, not a bound method made per call."""

    __slots__ = ()

    async def __aenter__(self) -> Ungoverned:
        return self

    @staticmethod
    async def __aexit__(et: object, e: object, tb: object) -> None:
        return None

    @staticmethod
    def done(response: ModelResponse) -> None:
        return None


#: The shared :class:`Ungoverned` block.
UNGOVERNED = Ungoverned()


def model_call(model: ChatModel, request: ModelRequest) -> ModelCall | Ungoverned:
    """Govern one model call (see the module docs): ``async with model_call(m, r) as call:``,
    then ``call.done(response)``; a shared no-op when no governor is bound."""
    scope = SCOPE.get()
    return UNGOVERNED if scope is None else ModelCall(scope, model, request)


def asks(scope: Scope, terms: Terms, est_in: int, max_tokens: int | None) -> tuple[int, int] | None:
    """The tokens and nano-dollars a call of ``est_in`` input tokens reserves (None: no budget
    and no rate limit apply): its input and maximum output (``max_tokens``, else the model's own
    default, else the governor's ``max_output_tokens``), and their price when a budget applies
    (ConfigurationError when a dollar budget does and no price is known)."""
    budgets = scope.budgets
    if not budgets and terms.limit is None:
        return None
    max_out = max_tokens or terms.max_out or scope.governor.max_output_tokens
    if not budgets:
        return est_in + max_out, 0
    price = terms.price
    if price is not None:
        return est_in + max_out, cost(price, est_in, max_out)
    if scope.usd:
        nanos = scope.governor.prices.require(terms.provider, terms.name, est_in, max_out)
        return est_in + max_out, nanos
    return est_in + max_out, 0


def new_admission(scope: Scope, terms: Terms, tokens: int, nanos: int) -> Admission:
    """The admission of a call asking ``tokens`` and ``nanos`` (:func:`asks`), with a new id."""
    rid = f"{_RIDS.prefix}{next(_RIDS.count):x}"
    return Admission(scope.limits, rid, tokens, nanos, terms.key, terms.rates, scope.tenant)


async def settled() -> None:
    """Wait for the settles of the calls of the bound block (:meth:`UsageGovernor.bind`) still
    running (a no-op when no governor is bound): then their usage is counted."""
    scope = SCOPE.get()
    if scope is not None:
        await scope.pending.wait()


async def flush(store: Any, governor: UsageGovernor | None = None) -> None:
    """Wait for every settle still running on ``store`` (and on ``governor``'s store): for a
    process that closes its store next. Nothing is made for a store that governed no call."""
    backend = known_backend(store)
    if backend is not None:
        await backend.settles.flush()
    if governor is not None and governor.store is not store:
        await governor.aclose()


def _refused(refusal: Refusal) -> BudgetExceededError:
    m = _metrics.METRICS
    if m is not None:
        m.budget_refusals.inc(_kind(refusal.name), "usd" if refusal.unit == "nanos" else "tokens")
    return _exceeded(refusal)


def _exceeded(refusal: Refusal) -> BudgetExceededError:
    """The error for a refusal: spent (settled use at the limit), or held by calls in flight."""
    spent = refusal.settled >= refusal.limit
    scale, unit = (1e9, "usd") if refusal.unit == "nanos" else (1.0, "tokens")
    shown = refusal.settled if spent else refusal.used
    used, limit = shown / scale, refusal.limit / scale
    amount = (
        f"${used:.4f} of ${limit:.4f}" if unit == "usd" else f"{shown} of {refusal.limit} tokens"
    )
    if spent:
        text = f"budget {refusal.name} is spent ({amount} used)"
    else:
        text = f"budget {refusal.name} is held by calls in flight ({amount} used or reserved)"
    return BudgetExceededError(
        f"{text}; raise the budget or start a new one to continue",
        budget=refusal.name,
        unit=unit,
        limit=limit,
        used=used,
        reason=text,
    )


async def spent_budget(
    budgets: Iterable[tuple[str, Budget]], store: Any
) -> BudgetExceededError | None:
    """The error a call on the first of ``budgets`` (name, limits) whose settled use reached its
    limit would get, read from ``store``'s ledger; None while each has something left (calls in
    flight may still hold it: a wait can end that, a spent budget only a higher limit can)."""
    backend = usage_backend(store)
    for name, budget in budgets:
        doc = await backend.read(name)
        if doc is None:
            continue
        tokens, nanos = int(doc.get("ut", 0)), int(doc.get("un", 0))
        if budget.max_tokens is not None and tokens >= budget.max_tokens:
            return _exceeded(Refusal(name, "tokens", budget.max_tokens, tokens, tokens))
        if budget.max_nanos is not None and nanos >= budget.max_nanos:
            return _exceeded(Refusal(name, "nanos", budget.max_nanos, nanos, nanos))
    return None


def _finish(terms: Terms, response: ModelResponse | None, est_in: int) -> tuple[int, int]:
    """(tokens, nanos) the call used; marks an estimate and the cost on the response."""
    if response is None:
        return 0, 0
    usage = response.usage
    tokens_in, tokens_out = usage.input_tokens, usage.output_tokens
    if tokens_in == 0 and tokens_out == 0:
        tokens_in, tokens_out = est_in, estimate_output(response)
        response.usage_estimated = True
    price = terms.price
    if price is None:
        return tokens_in + tokens_out, 0
    nanos = cost(price, tokens_in, tokens_out)
    response.cost_usd = nanos / 1e9
    return tokens_in + tokens_out, nanos


def _prompt_read(terms: Terms, est_in: int) -> tuple[int, int]:
    """(tokens, nanos) of a call cancelled while its request was with the provider: its prompt
    (estimated), which the provider read and bills; what it answered meanwhile is unknown."""
    price = terms.price
    return est_in, 0 if price is None else cost(price, est_in, 0)


def _kind(name: str) -> str:
    kind = name.partition(":")[0]
    return kind if kind in ("org", "user", "session", "team", "member", "run") else "named"


def _count(scope: Scope, used: tuple[int, int]) -> None:
    m = _metrics.METRICS
    if m is None:
        return
    for name, _ in scope.budgets:
        m.budget_tokens.inc(_kind(name), amount=used[0])
        if used[1]:
            m.budget_usd.inc(_kind(name), amount=used[1] / 1e9)
