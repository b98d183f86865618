"""Run the benchmarks: ``python -m bench`` (full) or ``python -m bench --fast`` (CI smoke run)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from . import store_latency
from .stats import machine


async def main(fast: bool) -> str:
    sections = [await store_latency.run(fast)]
    return "\n\n".join(sections)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--fast", action="store_true", help="few iterations: checks the harness")
    args = parser.parse_args()
    report = anyio.run(main, args.fast)
    text = f"# Benchmark results\n\nMachine: {machine()}\n\n{report}\n"
    print(text)
    if not args.fast:
        Path(__file__).with_name("RESULTS.md").write_text(text)
    sys.exit(0)
