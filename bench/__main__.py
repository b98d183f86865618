"""Run the benchmarks: ``python -m bench`` (full; writes bench/RESULTS.md, keeping its investigations
and profile notes: :mod:`bench.results_file`) or ``python -m bench --fast``.

``--fast`` runs every section with few iterations and small N: it checks the harness (CI runs it),
not the targets, and never fails on a missed one. Naming sections (``python -m bench session_roundtrip
react_overhead``) runs only those and prints them without touching RESULTS.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from . import (
    call_commands,
    call_overhead,
    cas_put,
    claim_held,
    claim_mysql,
    claim_native,
    claim_routed,
    claim_sql_scaling,
    cluster_claim,
    harness_concurrency,
    mailbox_latency,
    rate_limit_60,
    react_overhead,
    redis_lean,
    redis_pool,
    replica_acks,
    session_load,
    session_roundtrip,
    spawn_overhead,
    state_size,
    store_latency,
    task_claim,
    tracing_overhead,
    usage_in_flight,
    usage_instructions,
    usage_overhead,
    wakeup_claim,
    wakeup_latency,
)
from .anchor import anchor_python
from .results_file import merged
from .stats import machine

SECTIONS: dict[str, Callable[[bool], Awaitable[str]]] = {
    "store_latency": store_latency.run,
    "cas_put": cas_put.run,
    "session_roundtrip": session_roundtrip.run,
    "session_load": session_load.run,
    "react_overhead": react_overhead.run,
    "tracing_overhead": tracing_overhead.run,
    "call_overhead": call_overhead.run,
    "call_commands": call_commands.run,
    "harness_concurrency": harness_concurrency.run,
    "redis_pool": redis_pool.run,
    "redis_lean": redis_lean.run,
    "state_size": state_size.run,
    "task_claim": task_claim.run,
    "claim_held": claim_held.run,
    "claim_native": claim_native.run,
    "claim_routed": claim_routed.run,
    "claim_sql_scaling": claim_sql_scaling.run,
    "claim_mysql": claim_mysql.run,
    "cluster_claim": cluster_claim.run,
    "replica_acks": replica_acks.run,
    "mailbox_latency": mailbox_latency.run,
    "spawn_overhead": spawn_overhead.run,
    "wakeup_latency": wakeup_latency.run,
    "wakeup_claim": wakeup_claim.run,
    "usage_overhead": usage_overhead.run,
    "usage_instructions": usage_instructions.run,
    "usage_in_flight": usage_in_flight.run,
    "rate_limit_60": rate_limit_60.run,
}


async def main(fast: bool, names: list[str]) -> str:
    sections = []
    for name in names:
        t0 = time.perf_counter()
        sections.append(await SECTIONS[name](fast))
        print(f"[bench] {name}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return "\n\n".join(sections)


def header(fast: bool) -> str:
    anchor = anchor_python()
    lines = [
        "# Benchmark results",
        "",
        f"Machine: {machine()}",
        "",
        "Every figure is the median over repeated rounds (or runs) ± the interquartile range "
        "relative to the median (the full range when there are fewer than 4 runs); every ratio "
        "compares with a baseline measured in the same run, interleaved round by round. "
        "Anchor: AgentScope 2.0.11 "
        + (f"({anchor})." if anchor else "(not installed: anchor rows skipped)."),
    ]
    if fast:
        lines += ["", "**Fast mode**: few iterations, small N — checks the harness only."]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--fast", action="store_true", help="few iterations: checks the harness")
    parser.add_argument("sections", nargs="*", metavar="section", help=", ".join(SECTIONS))
    args = parser.parse_args()
    unknown = [n for n in args.sections if n not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {unknown}; choose from {', '.join(SECTIONS)}")
    names = args.sections or list(SECTIONS)
    head = header(args.fast)  # before the run: the load average is the machine's, not ours
    report = anyio.run(main, args.fast, names)
    text = f"{head}\n\n{report}"
    print(text)
    if not args.fast and not args.sections:  # keeps the investigations and the profile notes
        results = Path(__file__).with_name("RESULTS.md")
        previous = results.read_text(encoding="utf-8") if results.exists() else ""
        results.write_text(merged(text, previous), encoding="utf-8")
    sys.exit(0)
