"""Timing helpers: medians with spread, ratios against a baseline measured in the same run."""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass
class Sample:
    """Per-operation latencies (seconds) of repeated rounds."""

    name: str
    per_op: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.per_op)

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median."""
        if len(self.per_op) < 4:
            return 0.0
        q = statistics.quantiles(self.per_op, n=4)
        return (q[2] - q[0]) / self.median if self.median else 0.0


async def measure(
    name: str, op: Callable[[int], Awaitable[object]], *, ops: int, rounds: int
) -> Sample:
    """Run ``op(i)`` ``ops`` times per round; keep each round's mean per-op latency."""
    await op(-1)  # warm-up
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for i in range(ops):
            await op(i)
        out.append((time.perf_counter() - t0) / ops)
    return Sample(name, out)


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


def table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def machine() -> str:
    import os

    return (
        f"{platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs"
    )
