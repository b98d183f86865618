"""Timing helpers: medians with spread, ratios against a baseline measured in the same run.

Every figure the sections print is the median over repeated rounds, followed by its spread (the
interquartile range relative to the median). Baselines and subjects are measured *interleaved*, round by
round, so that a noisy neighbour slows both sides of a ratio alike.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

Op = Callable[[int], Awaitable[object]]
RoundFn = Callable[[int], Awaitable[float]]


@dataclass
class Sample:
    """Per-operation figures (seconds, or any unit) of repeated rounds."""

    name: str
    per_op: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.per_op)

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median (the full range below 4 values)."""
        if len(self.per_op) < 2 or not self.median:
            return 0.0
        if len(self.per_op) < 4:
            return (max(self.per_op) - min(self.per_op)) / self.median
        q = statistics.quantiles(self.per_op, n=4)
        return (q[2] - q[0]) / self.median


async def measure(name: str, op: Op, *, ops: int, rounds: int) -> Sample:
    """Run ``op(i)`` ``ops`` times per round; keep each round's mean per-op latency."""
    return (await interleaved({name: op}, ops=ops, rounds=rounds))[name]


async def interleaved(named: Mapping[str, Op], *, ops: int, rounds: int) -> dict[str, Sample]:
    """Like :func:`measure` for several ops, alternating them round by round (see :func:`compare`)."""
    return await compare({n: timed(op) for n, op in named.items()}, ops=ops, rounds=rounds)


def timed(op: Op, clock: Callable[[], float] = time.perf_counter) -> RoundFn:
    """A round function running ``op(i)`` for ``i`` in ``range(ops)``, timing the whole loop
    (wall time; ``clock=time.process_time`` for the process's CPU time, every thread included)."""

    async def run(ops: int) -> float:
        t0 = clock()
        for i in range(ops):
            await op(i)
        return (clock() - t0) / ops

    return run


async def compare(
    named: dict[str, RoundFn], *, ops: int, rounds: int, warmup: int = 2
) -> dict[str, Sample]:
    """Run each round function ``rounds`` times, alternating them, after a short warm-up.

    A round function runs ``ops`` operations and returns its seconds per operation (it may time only
    part of its work, or run in another process). The order rotates between rounds, so a load spike
    on the machine hits the baseline and the subject alike.
    """
    for fn in named.values():
        await fn(warmup)
    names = list(named)
    out: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            out[name].append(await named[name](ops))
    return {n: Sample(n, v) for n, v in out.items()}


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, nearest-rank."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:,.2f}"


def fmt(sample: Sample, unit: Callable[[float], str] = us) -> str:
    """``median ±spread`` in ``unit``."""
    return f"{unit(sample.median)} ±{sample.spread:.0%}"


def ratio(a: Sample, b: Sample) -> float:
    return a.median / b.median if b.median else math.inf


def verdict(met: bool, why: str = "") -> str:
    """ "met", or "missed (why)"."""
    return "met" if met else f"missed ({why})" if why else "missed"


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def section(title: str, intro: str, body: str, verdicts: list[str]) -> str:
    """A markdown section: heading, a short description, the table(s), one line per target."""
    lines = [f"### {title}", "", intro, "", body, ""]
    lines += [f"- {v}" for v in verdicts]
    return "\n".join(lines)


def machine() -> str:
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next(
                (ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), ""
            )
    except OSError:
        pass
    load = ""
    if hasattr(os, "getloadavg"):
        load = ", load average {:.2f} / {:.2f} / {:.2f} at start".format(*os.getloadavg())
    cpu = f" ({cpu})" if cpu else ""
    return (
        f"{platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs{cpu}{load}"
    )
