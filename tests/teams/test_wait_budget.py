"""``waitForTeam`` ends as soon as a budget every member draws on is spent, and says which: no
member can work on an open task then, so waiting out the timeout would only hold the lead."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, TeamLeadExtension
from agentscope_teams.usage import Budget, spent_budget
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.rules import GRANTED, Admission, Limit

from .test_tools import SPEC_DIR, results

pytestmark = pytest.mark.anyio
LIMIT = 1000
#: Long enough that a wait which ran to its timeout would be seen (the result says "Timed out").
WAIT = 30


async def _spend(store: BaseStore, name: str, tokens: int) -> None:
    """What members' calls do to budget ``name``: one call admitted on it, settled at ``tokens``."""
    call = Admission((Limit(name, LIMIT, None),), uuid.uuid4().hex, 10, 0)
    backend = usage_backend(store)
    assert await backend.admit(call) == GRANTED
    await backend.finish(call, tokens, 0)


def _lead(tmp_path: Path, store: BaseStore, model: ScriptedModel, **kw: object) -> HarnessAgent:
    ext = TeamLeadExtension(SPEC_DIR, run_members="workers")  # no member runs in this process
    return HarnessAgent("lead", model, workspace=tmp_path, store=store, extensions=[ext], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("store_spec", ["file", "redis", "postgres"], indirect=True)
async def test_the_wait_ends_when_the_team_budget_is_spent(
    tmp_path: Path, store: BaseStore
) -> None:
    ctx = RuntimeContext(session_id="s1", user_id="u-" + uuid.uuid4().hex[:8])
    client = LocalTeamClient(store, ctx)
    budget: list[str] = []

    async def spent_meanwhile(request: ModelRequest) -> ModelResponse:
        (team,) = await client.list_teams()
        budget.append(f"team:{team.id}")
        await _spend(store, budget[0], LIMIT + 200)
        return ScriptedModel.tool_call("waitForTeam", {"timeout_seconds": WAIT})

    model = ScriptedModel(
        [
            ScriptedModel.tool_call(
                "createTeam", {"name": "crew", "description": "goal", "max_tokens": LIMIT}
            ),
            ScriptedModel.tool_call("assignTask", {"title": "t1", "description": "work"}),
            spent_meanwhile,
            "done",
        ]
    )
    await _lead(tmp_path, store, model).call("go", ctx)
    waited = results(model)[-1]
    assert not waited.is_error and waited.data is not None
    assert waited.data["done"] is False
    assert (
        waited.data["stopped"]
        == f"budget {budget[0]} is spent ({LIMIT + 200} of {LIMIT} tokens used)"
    )
    assert waited.output.startswith(f"Stopped waiting: budget {budget[0]} is spent")
    assert "1 of 1 tasks are still open" in waited.output


@pytest.mark.parametrize("store_spec", ["redis"], indirect=True)
async def test_a_wait_with_budget_left_runs_to_its_timeout(
    tmp_path: Path, store: BaseStore
) -> None:
    """The lead's own budget still has room and the team has none of its own: the wait is not cut
    short (it times out, as before)."""
    ctx = RuntimeContext(session_id="s1", user_id="u-" + uuid.uuid4().hex[:8])
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("createTeam", {"name": "crew", "description": "goal"}),
            ScriptedModel.tool_call("assignTask", {"title": "t1", "description": "work"}),
            ScriptedModel.tool_call("waitForTeam", {"timeout_seconds": 0.5}),
            "done",
        ]
    )
    await _lead(tmp_path, store, model, budget=Budget(max_tokens=10**9)).call("go", ctx)
    waited = results(model)[-1]
    assert waited.data is not None and waited.data["stopped"] is None
    assert waited.output.startswith("Timed out after 0.5s")


@pytest.mark.parametrize("store_spec", ["file", "redis"], indirect=True)
async def test_spent_budget_names_the_first_budget_spent_in_either_unit(store: BaseStore) -> None:
    run = uuid.uuid4().hex[:8]
    tokens, dollars, roomy = f"team:t-{run}", f"team:d-{run}", f"team:r-{run}"
    for name, used, nanos in ((tokens, LIMIT, 0), (dollars, 10, 2_000_000_000), (roomy, 10, 0)):
        call = Admission((Limit(name, None, None),), uuid.uuid4().hex, 10, 0)
        assert await usage_backend(store).admit(call) == GRANTED
        await usage_backend(store).finish(call, used, nanos)
    at_limit = await spent_budget(
        [(roomy, Budget(max_tokens=LIMIT)), (tokens, Budget(max_tokens=LIMIT))], store
    )
    assert at_limit is not None and (at_limit.budget, at_limit.unit) == (tokens, "tokens")
    assert (at_limit.limit, at_limit.used, at_limit.over) == (LIMIT, LIMIT, 0)
    over = await spent_budget([(dollars, Budget(max_usd=1.5))], store)
    assert over is not None and (over.unit, over.limit, over.used) == ("usd", 1.5, 2.0)
    assert str(over).startswith(f"budget {dollars} is spent ($2.0000 of $1.5000 used)")
    assert await spent_budget([(roomy, Budget(max_tokens=LIMIT, max_usd=1.0))], store) is None
    assert await spent_budget([("team:never-used-" + run, Budget(max_tokens=1))], store) is None
