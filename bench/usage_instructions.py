"""Budgets and the shared rate limiter per model call, counted in instructions (Redis).

Wall-clock ratios of a 3-4 ms call swing by more than the overhead being measured on a shared
machine; instructions do not. Each variant runs in a process of its own under ``valgrind
--tool=callgrind`` (which counts every instruction the client process runs; the provider, a process of its own
(:mod:`.provider_process`), the Redis server and the kernel's side of each system call not;
until the fifth session of issue 27 the provider ran in the client's process and its threads
were counted too): the same set-up and warm-up, then ``N`` one-step
``HarnessAgent.call`` s of one variant. The instructions per call are the difference between a run
of ``N`` and one of ``N0`` calls, over ``N - N0``, so the set-up cancels out. Variants: ``plain``
(no governor); ``governed`` (a team budget and a rate limit on Redis, as in ``usage_overhead``);
``governor only`` (the same, with the store's two scripts answered in Python at once,
:mod:`.usage_null`: what the governor's own Python costs; the rest of the overhead is the two
scripts' round trips).
Under callgrind ``TURN_AHEAD`` is scaled by :data:`SLOWDOWN` (the early admission decides as at
full speed: :func:`_scale_turn_ahead`); the releases left are reported.
Run: ``python -m bench usage_instructions``; ``--fast`` runs the variants once each without
valgrind (a check of the harness). Needs ``valgrind`` (skipped without it).
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import anyio

from .fixtures import REDIS_URL, drop_redis_namespace
from .stats import section, table, verdict

#: Calls of a short and a long run (instructions per call: their difference over N - N0).
N0, N = 20, 120
#: How much slower a process runs under callgrind (about; ``TURN_AHEAD`` is scaled by it there).
SLOWDOWN = 100
#: Set for a child under callgrind (:func:`_scale_turn_ahead`).
SLOWED_ENV = "AGENTSCOPE_TEAMS_BENCH_SLOWED"
VARIANTS = {"plain": "plain", "governed": "governed", "governor only": "null"}


async def _child(mode: str, calls: int) -> None:
    """One process's calls: warm both agents up, then ``calls`` calls of ``mode``."""
    from agentscope_teams import HarnessAgent, RuntimeContext
    from agentscope_teams.agent.config import ReActConfig
    from agentscope_teams.model.openai import OpenAIChatModel
    from agentscope_teams.store import store_from_url
    from agentscope_teams.usage import Budget, RateLimit, UsageGovernor, add_budget

    from .provider_process import ProviderProcess
    from .usage_null import answer_at_once

    with ProviderProcess() as provider, tempfile.TemporaryDirectory() as tmp:
        space = f"bench-usage-{uuid.uuid4().hex[:8]}"  # sessions of its own, dropped after
        async with store_from_url(REDIS_URL, namespace=space) as store:
            model = OpenAIChatModel("bench", base_url=provider.base_url, api_key="k", max_retries=0)
            config = ReActConfig(stream_model=False)
            gov = UsageGovernor(store, rate_limit=RateLimit(requests_per_minute=1e7, burst=1000))
            if mode == "null":
                answer_at_once(gov.backend)
            team, name = Budget(max_tokens=10**12), "team:bench-" + uuid.uuid4().hex[:6]
            options = {"store": store, "workspace": tmp, "builtin_tools": False, "config": config}
            plain_lead = HarnessAgent("p", model, **options)  # type: ignore[arg-type]
            governed_lead = HarnessAgent("g", model, usage=gov, **options)  # type: ignore[arg-type]
            run, sessions = uuid.uuid4().hex[:6], itertools.count()

            def fresh() -> RuntimeContext:  # a new session each call: every call is one step
                return RuntimeContext(session_id=f"{run}-{next(sessions):06d}")

            async def plain() -> None:
                await plain_lead.call("hi", fresh())

            async def governed() -> None:
                with gov.bind(), add_budget(name, team):
                    await governed_lead.call("hi", fresh())

            for op in (plain, governed):
                for _ in range(10):
                    await op()
            op = plain if mode == "plain" else governed
            for _ in range(calls):
                await op()
            await model.aclose()
    await drop_redis_namespace(space)


def _command(mode: str, calls: int, counted: bool) -> list[str]:
    child = [sys.executable, "-m", "bench.usage_instructions", mode, str(calls)]
    if not counted:
        return child
    valgrind = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", "--cache-sim=no"]
    return [*valgrind, *child]


def _instructions(output: str) -> int:
    """The ``Collected`` count callgrind prints at the end of a run."""
    for line in output.splitlines():
        if "Collected :" in line:
            return int(line.rpartition(":")[2].strip())
    raise RuntimeError(f"callgrind printed no count:\n{output[-2000:]}")


def _run_pair(mode: str) -> float:
    """Instructions per call of ``mode``: a run of N0 and one of N calls, side by side."""
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONHASHSEED": "0"}  # the same dict layouts
    env[SLOWED_ENV] = "1"
    procs = [
        subprocess.Popen(
            _command(mode, n, True),
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in (N0, N)
    ]
    counts, released = [], []
    for p in procs:
        _, err = p.communicate()
        if p.returncode:
            raise RuntimeError(f"{mode} run failed ({p.returncode}):\n{err[-2000:]}")
        counts.append(_instructions(err))
        released.append(_released(err))
    RELEASED[mode] = released[1] - released[0]
    return (counts[1] - counts[0]) / (N - N0)


#: Early admissions released in the long run less the short one, per mode (TURN_AHEAD passed).
RELEASED: dict[str, int] = {}


def _released(output: str) -> int:
    for line in output.splitlines():
        if line.startswith("early admissions:"):
            return int(line.rpartition(" ")[2])
    return 0


def _check_harness() -> None:
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    for mode in VARIANTS.values():
        subprocess.run(_command(mode, 2, False), cwd=root, env=env, check=True)


async def run(fast: bool) -> str:
    """The ``usage_instructions`` section of ``python -m bench``."""
    title = "Budgets and shared rate limits: instructions per model call (Redis, callgrind)"
    if fast:
        await anyio.to_thread.run_sync(_check_harness)
        return section(title, "--fast: each variant ran 2 calls without valgrind.", "", [])
    if shutil.which("valgrind") is None:
        return section(title, "skipped: valgrind is not installed", "", [])
    per_call = {}
    for label, mode in VARIANTS.items():
        per_call[label] = await anyio.to_thread.run_sync(_run_pair, mode)
    plain = per_call["plain"]
    rows = [
        [
            label,
            f"{n / 1e6:.3f} M",
            f"{(n - plain) / 1e6:+.3f} M",
            f"{(n / plain - 1) * 100:+.2f} %",
        ]
        for label, n in per_call.items()
    ]
    overhead = per_call["governed"] / plain - 1
    python = (per_call["governor only"] - plain) / max(per_call["governed"] - plain, 1)
    return section(
        title,
        f"Instructions per one-step `HarnessAgent.call` ({N} calls less {N0}, each variant in its "
        "own process under callgrind); `governor only`: the store's two scripts answered in "
        "Python, so its overhead is the governor's own Python and the rest the two round trips.",
        table(["variant", "instructions per call", "over plain", "over plain %"], rows),
        [
            f"budget + limiter: {overhead * 100:+.2f} % of a one-step call's instructions; "
            "< 5 %: " + verdict(overhead < 0.05),
            f"of the overhead: {python:.0%} the governor's Python, {1 - python:.0%} the two "
            "scripts' round trips (client side)",
            f"early admissions released (older than TURN_AHEAD x {SLOWDOWN}) in the {N - N0} "
            f"counted governed calls: {RELEASED.get('governed', 0)}",
        ],
    )


def main() -> None:
    mode, calls = sys.argv[1], int(sys.argv[2])
    if os.environ.get(SLOWED_ENV):
        _scale_turn_ahead()
    anyio.run(_child, mode, calls)
    from agentscope_teams.usage import early

    c = early.Counts
    print(f"early admissions: sent {c.sent} taken {c.taken} released {c.released}", file=sys.stderr)


def _scale_turn_ahead() -> None:
    """Under callgrind every step of a call takes ~:data:`SLOWDOWN` times longer, so an early
    turn would often be older than ``TURN_AHEAD`` when its request is built (released, then
    taken again: two round trips a call on an unslowed machine does not make). Scaled alike, the
    early admission decides as it does at full speed."""
    from agentscope_teams.usage import early

    early.TURN_AHEAD *= SLOWDOWN


if __name__ == "__main__":
    main()
