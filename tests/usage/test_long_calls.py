"""A call in flight longer than a reservation's lifetime (a long stream) keeps its reservation
and lease: renewed while it runs, so another process never counts it as ended (a reservation
past its expiry is how a dead process's call ends) and never admits past the budget or the
concurrency limit."""

from __future__ import annotations

import multiprocessing
import time
import uuid
from typing import Any

import anyio
import anyio.to_thread
import pytest

from agentscope_teams.message import TextBlock, UserMsg
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import store_from_url
from agentscope_teams.usage import Budget, RateLimit, UsageGovernor, add_budget, rules, settled
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.governor import model_call
from agentscope_teams.usage.limiter import limiter_key
from agentscope_teams.usage.rules import Admission, Limit, Rates

from ..backends import StoreSpec

#: The reservations' lifetime in both processes (ms): renewed every second.
TTL_MS = 3000
#: A budget the long call's reservation alone fills.
CAP = 50


def _model(team: str) -> ScriptedModel:
    return ScriptedModel(["unused"], name="long-" + team)


def _long_call(url: str, team: str, began: Any, end: Any) -> None:
    """A governed call on ``team``'s budget that runs until ``end`` is set, then uses 40 tokens."""
    rules.RESERVATION_TTL_MS = TTL_MS

    async def main() -> None:
        async with store_from_url(url) as store:
            gov = UsageGovernor(store, max_output_tokens=100, rate_limit=RateLimit(concurrent=1))
            model = _model(team)
            request = ModelRequest(system_prompt="", messages=[UserMsg("hi")])
            with gov.bind(None), add_budget(team, Budget(max_tokens=CAP)):
                async with model_call(model, request) as call:
                    began.set()
                    await anyio.to_thread.run_sync(end.wait)  # the loop stays free
                    usage = Usage(input_tokens=30, output_tokens=10)
                    call.done(ModelResponse(content=[TextBlock(text="ok")], usage=usage))
                await settled()

    anyio.run(main)


@pytest.mark.parametrize(
    "store_spec", ["file", "sqlite", "mariadb", "postgres", "redis"], indirect=True
)
def test_a_call_in_flight_past_its_reservations_lifetime_still_holds_its_budget(
    store_spec: StoreSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rules, "RESERVATION_TTL_MS", TTL_MS)
    team = "team:" + uuid.uuid4().hex[:8]
    mp = multiprocessing.get_context("spawn")
    began, end = mp.Event(), mp.Event()
    proc = mp.Process(target=_long_call, args=(store_spec.url, team, began, end))
    proc.start()
    try:
        assert began.wait(60)
        time.sleep(2 * TTL_MS / 1000)  # without renewals its reservation has ended by now
        answer, turn = anyio.run(_admit_others, store_spec.url, team)
    finally:
        end.set()
        proc.join(60)
    assert proc.exitcode == 0
    assert answer.refusal is not None, "admitted while the long call holds the whole budget"
    assert answer.refusal.settled == 0  # held by the call in flight, not spent
    assert turn.wait_ms > 0, "a second call in flight on a limit of 1 concurrent call"
    doc = anyio.run(_read, store_spec.url, team)
    assert doc is not None and (doc["ut"], doc["rt"]) == (40, 0)


async def _admit_others(url: str, team: str) -> tuple[Any, Any]:
    """Another call's admission on the budget, and on the concurrency limit."""
    async with store_from_url(url) as store:
        backend = usage_backend(store)
        budget = await backend.admit(Admission((Limit(team, CAP, None),), uuid.uuid4().hex, 10, 0))
        key = limiter_key(_model(team))
        turn = Admission((), uuid.uuid4().hex, 10, 0, key, Rates(concurrent=1), "other")
        return budget, await backend.admit(turn)


async def _read(url: str, team: str) -> Any:
    async with store_from_url(url) as store:
        return await usage_backend(store).read(team)
