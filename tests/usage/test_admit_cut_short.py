"""A model call's own ``ADMIT`` cut short after the server ran it (the call cancelled while it
waits for the reply, or the reply lost) holds nothing past the call: its reservation, its
concurrency lease and its turn are given back, as an early ``ADMIT`` whose round trip failed is."""

from __future__ import annotations

import uuid
from typing import Any

import anyio
import pytest

from agentscope_teams import Budget, RateLimit
from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.agent.react import ReActAgent
from agentscope_teams.errors import StoreUnavailableError
from agentscope_teams.model.base import Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import BaseStore
from agentscope_teams.usage import UsageGovernor, add_budget, flush
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.limiter import limiter_key

pytestmark = pytest.mark.anyio
#: One call at a time: a lease left held keeps every other call of the model waiting.
ONE_AT_A_TIME = RateLimit(concurrent=1)


def _model() -> ScriptedModel:
    used = Usage(input_tokens=30, output_tokens=10)
    return ScriptedModel([ScriptedModel.text("ok", usage=used)], name="m-" + uuid.uuid4().hex[:8])


def _admit_runs_then(redis: Any, monkeypatch: pytest.MonkeyPatch, then: Any) -> anyio.Event:
    """Make the first ``ADMIT`` run on the server, then ``await then()`` before its reply comes
    back (set: it ran)."""
    ran = anyio.Event()
    client, sha = redis.client, usage_backend(redis)._admit.sha  # type: ignore[attr-defined]
    one = client.execute_command

    async def execute_command(*args: Any, **kw: Any) -> Any:
        reply = await one(*args, **kw)
        if args[:2] == ("EVALSHA", sha) and not ran.is_set():
            ran.set()
            await then()
        return reply

    monkeypatch.setattr(client, "execute_command", execute_command)
    return ran


async def _left(redis: Any, team: str, model: ScriptedModel) -> tuple[int, int, list[str]]:
    """(settled tokens, reserved tokens, the limiter's leases) once every settle landed."""
    await flush(redis)
    backend: Any = usage_backend(redis)
    doc = await backend.read(team)
    raw = await redis.client.hgetall(backend._limiter(limiter_key(model)))
    leases = [k.decode() for k in raw if k.startswith(b"l:")]
    return (-1, -1, leases) if doc is None else (doc["ut"], doc["rt"], leases)


async def _reply(gov: UsageGovernor, team: str, model: ScriptedModel) -> None:
    agent = ReActAgent("a", model, config=ReActConfig(stream_model=False))
    with gov.bind(), add_budget(team, Budget(max_tokens=10**9)):
        await agent.reply("go", AgentState(session_id="s"))


async def test_a_call_cancelled_in_its_admit_round_trip_holds_nothing(
    redis: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    model, team = _model(), "team:" + uuid.uuid4().hex[:8]
    gov = UsageGovernor(redis, rate_limit=ONE_AT_A_TIME)
    ran = _admit_runs_then(redis, monkeypatch, anyio.sleep_forever)
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(_reply, gov, team, model)
            await ran.wait()  # reserved and leased on the server, the reply not read
            tg.cancel_scope.cancel()
    monkeypatch.undo()
    assert model.requests == []
    assert await _left(redis, team, model) == (0, 0, [])


async def test_a_call_whose_admit_reply_is_lost_holds_nothing(
    redis: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def lost() -> None:
        raise StoreUnavailableError("the connection dropped before the reply was read")

    model, team = _model(), "team:" + uuid.uuid4().hex[:8]
    gov = UsageGovernor(redis, rate_limit=ONE_AT_A_TIME)
    _admit_runs_then(redis, monkeypatch, lost)
    with pytest.raises(StoreUnavailableError):
        await _reply(gov, team, model)
    monkeypatch.undo()
    assert model.requests == []
    assert await _left(redis, team, model) == (0, 0, [])
