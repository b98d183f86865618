"""Wall time of ``agentscope-teams review`` on installed third-party packages, before and after.

    python -m bench.review_time [--baseline /work/main/.venv] [--rounds 3] [PACKAGE ...]

"before" is the console script of another install (``--baseline``: a virtualenv, e.g. one of the
main branch), "after" the one of this interpreter. Each package (default: rich and uvicorn, from
this interpreter's site-packages) is copied to a temporary directory once; every round runs both,
interleaved, each with a fresh HOME (a cold analysis cache) and its own file store, and "after
(warm)" runs once more on the cache the cold run left. Prints a Markdown table of medians and the
ratio after / before. Not part of ``python -m bench``: it needs the baseline install.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path

DEFAULT_PACKAGES = ("rich", "uvicorn")


def package_dir(name: str) -> Path:
    spec = find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{name} is not an installed package")
    return Path(next(iter(spec.submodule_search_locations)))


def review_seconds(cli: Path, target: Path, home: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSCOPE_TEAMS_")}
    env.pop("OPENAI_API_KEY", None)
    env.pop("DASHSCOPE_API_KEY", None)
    env.pop("XDG_CACHE_HOME", None)
    env["HOME"] = str(home)
    store = f"file://{home / 'store'}"
    args = [str(cli), "review", str(target), "--store", store, "--output", str(home / "r.md")]
    start = time.perf_counter()
    subprocess.run(args, env=env, check=True, capture_output=True, timeout=900)
    return time.perf_counter() - start


def measure(baseline: Path, packages: list[str], rounds: int) -> str:
    after_cli = Path(sys.executable).with_name("agentscope-teams")
    before_cli = baseline / "bin" / "agentscope-teams"
    rows = ["| package | files | before s | after s (cold cache) | after s (warm) | after / before |",
            "|---|---|---|---|---|---|"]  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for name in packages:
            target = Path(tmp) / name
            shutil.copytree(package_dir(name), target, ignore=shutil.ignore_patterns("__pycache__"))
            files = sum(1 for _ in target.rglob("*.py"))
            times: dict[str, list[float]] = {"before": [], "cold": [], "warm": []}
            for i in range(rounds):
                times["before"].append(review_seconds(before_cli, target, Path(tmp) / f"b{i}"))
                home = Path(tmp) / f"a{i}"
                times["cold"].append(review_seconds(after_cli, target, home))
                shutil.rmtree(home / "store")
                times["warm"].append(review_seconds(after_cli, target, home))
            med = {k: statistics.median(v) for k, v in times.items()}
            rows.append(
                f"| {name} | {files} | {med['before']:.1f} | {med['cold']:.1f} | "
                f"{med['warm']:.1f} | {med['cold'] / med['before']:.2f} |"
            )
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return "\n".join([*rows, "", f"Medians of {rounds} interleaved rounds; load average {load}."])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", default=list(DEFAULT_PACKAGES))
    parser.add_argument("--baseline", type=Path, default=Path("/work/main/.venv"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(measure(args.baseline, args.packages, args.rounds))


if __name__ == "__main__":
    main()
