"""What budgets and rate limits cost a model call in store operations, counted on the real Redis
and file stores: one before the call (reservation and turn together), one after (settle and lease
end), one alone for a rate limit with nothing to settle, none when nothing applies."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.agent.react import ReActAgent
from agentscope_teams.message import TextBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import BaseStore
from agentscope_teams.usage import Budget, RateLimit, UsageGovernor, add_budget, tenant
from agentscope_teams.usage.backend import usage_backend

from ..backends import StoreSpec
from ..teams.round_trips import count_round_trips

pytestmark = pytest.mark.anyio
USED = Usage(input_tokens=30, output_tokens=10)


def _count_operations(store: BaseStore, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The usage operations ``store`` runs from now on (a Redis script, a locked document update)."""
    seen: list[str] = []
    backend: Any = usage_backend(store)
    if hasattr(backend, "docs"):
        target, name = backend.docs, "update"
    else:
        target, name = store, "run_script"
    original = getattr(target, name)

    async def counted(*args: Any, **kwargs: Any) -> Any:
        seen.append(name)
        return await original(*args, **kwargs)

    monkeypatch.setattr(target, name, counted)
    return seen


async def _one_call(
    store: BaseStore,
    gov: UsageGovernor,
    budget: Budget | None,
    team: str | None = None,
    who: str = "-",
) -> None:
    """One governed model call (as tenant ``who``, under ``budget`` named ``team``)."""

    def reply(request: ModelRequest) -> ModelResponse:
        return ModelResponse(content=[TextBlock(text="ok")], usage=USED)

    agent = ReActAgent("a", ScriptedModel(reply), config=ReActConfig(stream_model=False))
    with gov.bind(), add_budget(team or "team:" + uuid.uuid4().hex[:8], budget), tenant(who):
        await agent.reply("hi", AgentState(session_id="s"))


@pytest.mark.parametrize("store_spec", ["file", "redis"], indirect=True)
async def test_a_governed_call_costs_one_operation_before_and_one_after(
    store: BaseStore, store_spec: StoreSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    budget = Budget(max_tokens=10**9)
    # limits that never make a call wait (a burst: two calls in the same millisecond pass)
    rpm = RateLimit(requests_per_minute=1e7, burst=1000)
    with_lease = RateLimit(requests_per_minute=1e7, burst=1000, concurrent=100)
    cases = [
        ("budget and a rate limit with leases", with_lease, budget, 2),
        ("budget only", None, budget, 2),
        ("requests per minute only: nothing to end after the call", rpm, None, 1),
        ("a governor with nothing to apply", None, None, 0),
    ]  # fmt: skip
    for what, limit, spend, expected in cases:
        gov = UsageGovernor(store, rate_limit=limit)
        await _one_call(store, gov, spend)  # the scripts are loaded, the documents exist
        seen = _count_operations(store, monkeypatch)
        await _one_call(store, gov, spend)
        monkeypatch.undo()
        assert len(seen) == expected, (what, seen)


@pytest.mark.parametrize("store_spec", ["redis"], indirect=True)
async def test_the_one_operation_settles_the_budget_and_ends_the_lease(store: BaseStore) -> None:
    team = "team:" + uuid.uuid4().hex[:8]
    gov = UsageGovernor(
        store, rate_limit=RateLimit(requests_per_minute=1e7, concurrent=1, max_wait=2)
    )

    def reply(request: ModelRequest) -> ModelResponse:
        return ModelResponse(content=[TextBlock(text="ok")], usage=USED)

    agent = ReActAgent("a", ScriptedModel(reply), config=ReActConfig(stream_model=False))
    with gov.bind(), add_budget(team, Budget(max_tokens=10**9)):
        for _ in range(3):  # one slot: a lease left behind makes the next call fail to get a turn
            await agent.reply("hi", AgentState(session_id="s"))
    doc = await usage_backend(store).read(team)
    assert doc is not None and doc["ut"] == 3 * 40 and doc["rt"] == 0


@pytest.mark.parametrize("store_spec", ["postgres"], indirect=True)
async def test_on_postgres_each_step_is_one_statement_without_a_transaction(
    store: BaseStore, store_spec: StoreSpec
) -> None:
    """Statements sent to PostgreSQL per governed call: the admit and the finish statement, no
    BEGIN or COMMIT (the locked transaction it replaces sent five per step)."""
    with_lease = RateLimit(requests_per_minute=1e7, burst=1000, concurrent=100)
    rpm = RateLimit(requests_per_minute=1e7, burst=1000)
    cases = [
        ("budget and a rate limit with leases", with_lease, Budget(max_tokens=10**9), ["WITH"] * 2),
        ("requests per minute only", rpm, None, ["WITH"]),
    ]  # fmt: skip
    for what, limit, spend, expected in cases:
        gov = UsageGovernor(store, rate_limit=limit)
        team = "team:" + uuid.uuid4().hex[:8]
        # a budget's first call finds no row: it inserts it (one transaction), then decides again
        await _one_call(store, gov, spend, team)
        async with count_round_trips(store) as trips:
            await _one_call(store, gov, spend, team)
        assert trips.seen == expected, what


@pytest.mark.parametrize("store_spec", ["mariadb"], indirect=True)
async def test_on_mariadb_a_governed_call_raises_no_server_warning(
    store: BaseStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A budget's rows exist after its first call; creating them again must not warn (an
    ``INSERT IGNORE`` did: asyncmy then sent ``SHOW WARNINGS`` and logged "Duplicate entry" on
    every governed call)."""
    team = "team:" + uuid.uuid4().hex[:8]
    gov = UsageGovernor(store, rate_limit=RateLimit(requests_per_minute=1e7, burst=1000))
    await _one_call(store, gov, Budget(max_tokens=10**9), team)
    with caplog.at_level("WARNING"):
        for _ in range(2):
            await _one_call(store, gov, Budget(max_tokens=10**9), team)
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []


@pytest.mark.parametrize("store_spec", ["mariadb"], indirect=True)
async def test_on_mariadb_each_step_is_two_round_trips_its_writes_sent_with_the_commit(
    store: BaseStore, store_spec: StoreSpec
) -> None:
    """Round trips to MariaDB per governed call, once the budget's rows exist: per step the
    locked read of the heads with the rows it wants (guessed from the heads this process left),
    then its writes and the COMMIT in one packet, on the driver's connection (through SQLAlchemy
    each read, each write and the commit went apart: five a step). When another process changed
    the heads meanwhile (here: a new tenant, so the requests limit's window of unseen tenants
    moved), the rows the real heads ask for are read in one more round trip."""
    team = "team:" + uuid.uuid4().hex[:8]
    # a requests limit whose window of unseen tenants (3 intervals a tenant) never makes a call
    # wait here (the burst), keyed by a model of this test's own
    limit = RateLimit(requests_per_minute=6, burst=1000, concurrent=100)
    gov = UsageGovernor(store, rate_limit=limit)
    await _one_call(store, gov, Budget(max_tokens=10**9), team, "me")
    async with count_round_trips(store) as trips:
        await _one_call(store, gov, Budget(max_tokens=10**9), team, "me")
    assert trips.seen == ["SELECT", "INSERT"] * 2, trips.statements
    assert trips.on_driver == set(range(4))
    for read in trips.statements[0::2]:  # the locked heads, then the rows, in one packet
        assert "FOR UPDATE;SELECT" in read and "usage_entry" in read, read
    for write in trips.statements[1::2]:
        assert write.rstrip().endswith("COMMIT"), write

    async with store_spec.open() as other:  # a second tenant, added by another process
        await _one_call(other, UsageGovernor(other, rate_limit=limit), None, team, "another")
    async with count_round_trips(store) as trips:
        await _one_call(store, gov, Budget(max_tokens=10**9), team, "me")
    assert trips.seen == ["SELECT", "SELECT", "INSERT", "SELECT", "INSERT"], trips.statements
    doc = await usage_backend(store).read(team)
    assert doc is not None and doc["ut"] == 3 * 40 and doc["rt"] == 0
