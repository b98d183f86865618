"""Process-wide Prometheus metrics: model, tool and agent calls, task events, store conflicts.

Off until :func:`enable` is called (``serve`` does, and ``worker --metrics-port``); while off, each
hook of :mod:`.spans` costs one module-attribute read. The text exposition format is rendered here
(no dependency). Labels never carry tenant data or ids: provider, model and tool names come from the
deployment's configuration, outcomes and task events are fixed sets; agent and team names (chosen by
tenants) are not labels. A model can still name tools that do not exist, so each metric keeps at most
:data:`MAX_SERIES` label sets; later ones are counted under the label value ``_other``.
Metric names and meanings: docs/operations.md, "Metrics and health checks".
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence

__all__ = ["MAX_SERIES", "METRICS", "Metrics", "add_refresher", "enable", "refresh", "render"]

#: Label sets kept per metric; further ones are merged under ``_other``.
MAX_SERIES = 200
OTHER = "_other"
#: Seconds: a model call takes from well under a second to minutes.
MODEL_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
#: Seconds a task waits from its creation to its first claim: from instant to hours.
WAIT_BUCKETS = (0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0)
TOOL_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 120.0, 600.0)
RATE_WAIT_BUCKETS = (0.0, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0)
#: Seconds a store operation takes: a local Redis command to a slow SQL transaction.
STORE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0)
#: Seconds from a task's assignment to its member's claim: a running worker to a cold start.
WAKEUP_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0, 300.0)
#: The hook events a denial can come from (hooks that block a tool call, a prompt or a stop).
HOOK_EVENTS = ("PreToolUse", "PermissionRequest", "UserPromptSubmit", "Stop", "SubagentStop")
#: Why a shell command was refused (``agentscope_teams.sandbox.denials``): by the permission
#: engine, or by the kernel in a contained sandbox (a write outside the workspace, the network,
#: another operation).
SANDBOX_REASONS = ("permission", "filesystem", "network", "operation")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


class _Metric:
    """One metric family: a value (or histogram state) per label set, guarded by a lock (``serve``
    answers scrapes from another thread than the one its agents may run in)."""

    kind = ""

    def __init__(self, name: str, help: str, labels: Sequence[str] = ()) -> None:
        self.name, self.help, self.labels = name, help, tuple(labels)
        self.lock = threading.Lock()

    def _key(
        self, values: tuple[str, ...], series: Mapping[tuple[str, ...], object]
    ) -> tuple[str, ...]:
        if values in series or len(series) < MAX_SERIES:
            return values
        return (OTHER,) * len(values)

    def _labels(self, values: tuple[str, ...], extra: str = "") -> str:
        pairs = [f'{n}="{_escape(v)}"' for n, v in zip(self.labels, values, strict=True)]
        if extra:
            pairs.append(extra)
        return "{" + ",".join(pairs) + "}" if pairs else ""

    def header(self) -> list[str]:
        return [f"# HELP {self.name} {_escape(self.help)}", f"# TYPE {self.name} {self.kind}"]


class Counter(_Metric):
    """A count that only goes up (``_total`` in its name)."""

    kind = "counter"

    def __init__(self, name: str, help: str, labels: Sequence[str] = ()) -> None:
        super().__init__(name, help, labels)
        self.values: dict[tuple[str, ...], float] = {}

    def inc(self, *values: str, amount: float = 1.0) -> None:
        with self.lock:
            key = self._key(values, self.values)
            self.values[key] = self.values.get(key, 0.0) + amount

    def set_all(self, values: Mapping[tuple[str, ...], float]) -> None:
        """Replace every series with ``values`` (a gauge read from elsewhere)."""
        with self.lock:
            self.values = dict(values)

    def get(self, *values: str) -> float:
        return self.values.get(values, 0.0)

    def render(self) -> list[str]:
        with self.lock:
            items = list(self.values.items())
        return [*self.header(), *(f"{self.name}{self._labels(k)} {_number(v)}" for k, v in items)]


class Gauge(Counter):
    """A value that goes up and down (``inc`` with a negative ``amount``)."""

    kind = "gauge"


class Histogram(_Metric):
    """Observations counted in cumulative buckets, with their sum and count."""

    kind = "histogram"

    def __init__(
        self, name: str, help: str, labels: Sequence[str], buckets: Sequence[float]
    ) -> None:
        super().__init__(name, help, labels)
        self.buckets = tuple(sorted(buckets))
        #: label set -> [count per bucket (not cumulative; last: above all), sum]
        self.values: dict[tuple[str, ...], tuple[list[int], list[float]]] = {}

    def observe(self, value: float, *values: str) -> None:
        with self.lock:
            key = self._key(values, self.values)
            counts, total = self.values.setdefault(key, ([0] * (len(self.buckets) + 1), [0.0]))
            index = next((i for i, b in enumerate(self.buckets) if value <= b), len(self.buckets))
            counts[index] += 1
            total[0] += value

    def render(self) -> list[str]:
        lines = self.header()
        with self.lock:
            items = [(k, list(c), s[0]) for k, (c, s) in self.values.items()]
        for key, counts, total in items:
            running = 0
            for bound, count in zip([*self.buckets, math.inf], counts, strict=True):
                running += count
                le = f'le="{_number(bound)}"'
                lines.append(f"{self.name}_bucket{self._labels(key, le)} {running}")
            lines.append(f"{self.name}_sum{self._labels(key)} {_number(total)}")
            lines.append(f"{self.name}_count{self._labels(key)} {running}")
        return lines


#: The prefix of every metric name.
PREFIX = "agentscope_teams_"


class Metrics:
    """The metrics of this process (names: docs/operations.md)."""

    def __init__(self) -> None:
        self._models_and_tools(PREFIX)
        self._agents_and_tasks(PREFIX)
        self._board_and_server(PREFIX)
        self._usage_metrics(PREFIX)
        #: Every metric, in the order declared.
        self.all: list[Counter | Histogram] = [
            m for m in vars(self).values() if isinstance(m, Counter | Histogram)
        ]

    def _models_and_tools(self, p: str) -> None:
        self.model_calls = Counter(
            p + "model_calls_total",
            "Model requests, by provider, model and outcome (ok, error).",
            ("provider", "model", "outcome"),
        )
        self.model_tokens = Counter(
            p + "model_tokens_total",
            "Tokens the model responses reported, by provider, model, agent kind (agent, "
            "subagent) and direction (input, output).",
            ("provider", "model", "agent", "direction"),
        )
        self.model_cost = Counter(
            p + "model_cost_usd_total",
            "US dollars the model responses cost (by the price database or its overrides; "
            "responses of unpriced models are not counted), by provider, model and agent kind.",
            ("provider", "model", "agent"),
        )
        self.model_seconds = Histogram(
            p + "model_call_seconds",
            "Duration of model requests (to the whole response), by provider and model.",
            ("provider", "model"),
            MODEL_BUCKETS,
        )
        self.tool_calls = Counter(
            p + "tool_calls_total",
            "Tool calls, by tool and outcome (ok, tool_error, exception).",
            ("tool", "outcome"),
        )
        self.tool_denials = Counter(
            p + "tool_denials_total",
            "Tool calls refused before they ran, by tool and source (hook: a PreToolUse hook; "
            "permission: the permission rules, the mode or a PermissionRequest hook).",
            ("tool", "source"),
        )
        self.tool_seconds = Histogram(
            p + "tool_call_seconds", "Duration of tool calls, by tool.", ("tool",), TOOL_BUCKETS
        )
        self.hook_denials = Counter(
            p + "hook_denials_total",
            "Hook runs that blocked what they were asked about (a tool call, a prompt, a stop), by "
            "hook event.",
            ("event",),
        )
        self.sandbox_denials = Counter(
            p + "sandbox_denials_total",
            "Shell commands refused, by reason (permission: by the permission engine before they "
            "ran; filesystem, network, operation: by the kernel in a contained sandbox).",
            ("reason",),
        )
        for event in HOOK_EVENTS:  # known label values start at 0 (Prometheus practice)
            self.hook_denials.inc(event, amount=0)
        for reason in SANDBOX_REASONS:
            self.sandbox_denials.inc(reason, amount=0)

    def _agents_and_tasks(self, p: str) -> None:
        self.agent_calls = Counter(
            p + "agent_calls_total",
            "Agent calls (call or stream), by kind (agent, subagent) and outcome (ok, error, "
            "cancelled).",
            ("kind", "outcome"),
        )
        self.agent_calls_running = Gauge(
            p + "agent_calls_running", "Agent calls running now, by kind.", ("kind",)
        )
        for kind in ("agent", "subagent"):  # the live calls are exported at 0 from the start
            self.agent_calls_running.inc(kind, amount=0)
        self.task_events = Counter(
            p + "task_events_total",
            "Team task board transitions made in this process (claimed, completed, failed).",
            ("event",),
        )
        self.task_wait_seconds = Histogram(
            p + "task_wait_seconds",
            "Time from a task's creation to its first claim (claim latency of the queue), for "
            "claims made in this process.",
            (),
            WAIT_BUCKETS,
        )
        self.task_wakeup_seconds = Histogram(
            p + "task_wakeup_seconds",
            "Time from a task's assignment to a member to that member's claim (the member's "
            "wake-up latency), observed by the member's runtime when its claim lands.",
            (),
            WAKEUP_BUCKETS,
        )

    def _board_and_server(self, p: str) -> None:
        self.tasks = Gauge(
            p + "tasks",
            "Open tasks of the teams in the store's team directory, by status (pending: the queue "
            "depth; in_progress), read before each scrape (serve only).",
            ("status",),
        )
        self.members = Gauge(
            p + "members",
            "Members of the teams in the store's team directory, by status, read before each "
            "scrape (serve only).",
            ("status",),
        )
        self.teams = Gauge(
            p + "teams",
            "Teams in the store's team directory, read before each scrape (serve only).",
        )
        self.board_scan_seconds = Gauge(
            p + "board_scan_seconds",
            "How long the last read of every team's open board took (serve only).",
        )
        self.store_conflicts = Counter(
            p + "store_conflicts_total",
            "Lost compare-and-set writes (each retried by the caller).",
        )
        self.store_seconds = Histogram(
            p + "store_operation_seconds",
            "Duration of store operations, by backend (memory, file, sqlite, postgresql, mysql, "
            "redis, redis_cluster) and operation.",
            ("backend", "operation"),
            STORE_BUCKETS,
        )
        self.store_errors = Counter(
            p + "store_errors_total",
            "Store operations that failed (the store unreachable or answering with an error; "
            "lost compare-and-set writes are store_conflicts_total), by backend and operation.",
            ("backend", "operation"),
        )
        self.http_requests_running = Gauge(
            p + "http_requests_running",
            "Control-plane API requests being served now (serve only; event streams excluded).",
        )

    def _usage_metrics(self, p: str) -> None:
        """Budgets and shared rate limits (:mod:`agentscope_teams.usage`); a budget's scope is its
        kind (org, user, session, team, member, run, named), never its id."""
        self.budget_tokens = Counter(
            p + "budget_tokens_total",
            "Tokens charged to budgets, by budget scope (org, user, session, team, member, run).",
            ("scope",),
        )
        self.budget_usd = Counter(
            p + "budget_usd_total", "US dollars charged to budgets, by budget scope.", ("scope",)
        )
        self.budget_refusals = Counter(
            p + "budget_refusals_total",
            "Model calls refused because a budget was spent, by scope and unit (tokens, usd).",
            ("scope", "unit"),
        )
        self.ratelimit_wait = Histogram(
            p + "ratelimit_wait_seconds",
            "Time model calls waited for a turn of a shared rate limit, by provider and model.",
            ("provider", "model"),
            RATE_WAIT_BUCKETS,
        )
        self.ratelimit_timeouts = Counter(
            p + "ratelimit_timeouts_total",
            "Model calls that got no turn within their wait bound, by provider and model.",
            ("provider", "model"),
        )
        self.ratelimit_holdoffs = Counter(
            p + "ratelimit_holdoffs_total",
            "429 answers that paused every process's turns (Retry-After), by provider and model.",
            ("provider", "model"),
        )

    def render(self) -> str:
        """The text exposition format of every metric."""
        return "\n".join(line for m in self.all for line in m.render()) + "\n"


#: The process's metrics, or None while metrics are off (the hooks' one check).
METRICS: Metrics | None = None
_enable_lock = threading.Lock()


def enable() -> Metrics:
    """Turn metrics on for this process (idempotent) and return them."""
    global METRICS
    with _enable_lock:
        if METRICS is None:
            METRICS = Metrics()
        return METRICS


def render() -> str:
    """The exposition text of this process's metrics (enabling them if they were off)."""
    return enable().render()


#: Async callables that update gauges read from elsewhere (e.g. the task board) before a scrape.
Refresher = Callable[[], Awaitable[None]]
_refreshers: list[Refresher] = []


def add_refresher(refresher: Refresher) -> Callable[[], None]:
    """Run ``refresher`` before each scrape of this process (:func:`refresh`); returns the function
    that removes it."""
    _refreshers.append(refresher)
    return lambda: _refreshers.remove(refresher) if refresher in _refreshers else None


async def refresh() -> None:
    """Run every refresher; one that fails is logged and leaves its gauges as they were."""
    for refresher in list(_refreshers):
        try:
            await refresher()
        except Exception as exc:
            logging.getLogger(__name__).warning("metrics refresh failed: %s", exc)
