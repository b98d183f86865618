"""The worker side of the anchor protocol (see ``anchor.py``), for scripts run by the AgentScope venv.

Standard library only: it runs under the anchor interpreter, where agentscope_teams is not installed.
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

RoundFn = Callable[[int], Awaitable[float]]
Cleanup = Callable[[], Awaitable[None]]
Setup = Callable[[], Awaitable[tuple[dict[str, Any], RoundFn, Cleanup | None]]]


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def _serve(setup: Setup) -> None:
    try:
        ready, run_round, cleanup = await setup()
    except Exception as exc:
        traceback.print_exc()
        _emit({"error": f"setup failed: {type(exc).__name__}: {exc}"})
        return
    _emit({"ready": True, **ready})
    try:
        await _answer(run_round)
    finally:
        if cleanup is not None:
            await cleanup()


async def _answer(run_round: RoundFn) -> None:
    loop = asyncio.get_running_loop()
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if not line or line == "quit":
            return
        cmd, _, arg = line.partition(" ")
        try:
            if cmd != "round":
                raise ValueError(f"unknown command {cmd!r}")
            _emit({"per_op": await run_round(int(arg))})
        except Exception as exc:
            traceback.print_exc()
            _emit({"error": f"{type(exc).__name__}: {exc}"})


def serve(setup: Setup) -> None:
    """Run ``setup`` (returns the ready info, the round function and an optional cleanup), then
    answer rounds until ``quit`` or the end of stdin, then clean up."""
    asyncio.run(_serve(setup))
