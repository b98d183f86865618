"""The budgets of a team and its members around a member's call (:mod:`agentscope_teams.usage`):
``team:<id>`` shared by every member in every process, ``member:<id>/<name>`` its own, and in a
worker the lead's (its session's, user's, org's, from the team's directory record), which members
in the lead's process inherit; members of one team share rate limits as one tenant (the team), so
a noisy team cannot starve others."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from ...agent.failures import failure_of
from ...errors import BudgetExceededError
from ...usage import Budget, add_budget, budget_of, current_scope, tenant
from ..protocol import TeamClient
from ..rules.models import Member, Team


def lead_budgets() -> dict[str, Budget]:
    """The budgets in force for the lead's call here (name -> limits; none without a governor)."""
    scope = current_scope()
    return dict(scope.budgets) if scope is not None else {}


def shared_budgets(
    team: Team, lead: Mapping[str, Budget] | None = None
) -> list[tuple[str, Budget]]:
    """The budgets every member of ``team`` draws on (name, limits): the ``lead``'s and the
    team's own (else the governor's ``"team"`` default, as ``worker --max-tokens`` sets)."""
    scope = current_scope()
    default = scope.governor.budgets.get("team") if scope is not None else None
    found = [*(lead or {}).items()]
    own_team = budget_of(team.max_tokens, team.max_budget_usd) or default
    if own_team is not None:
        found.append((f"team:{team.id}", own_team))
    return found


@contextlib.contextmanager
def team_budgets(
    team: Team, member: Member | None, store: Any, lead: Mapping[str, Budget] | None = None
) -> Iterator[None]:
    """Apply the budgets every member draws on (:func:`shared_budgets`), ``member``'s own and the
    team's rate-limit tenancy to the block."""
    with contextlib.ExitStack() as stack:
        for name, budget in shared_budgets(team, lead):
            stack.enter_context(add_budget(name, budget, store=store))
        if member is not None:
            own = budget_of(member.max_tokens, member.max_budget_usd)
            stack.enter_context(add_budget(f"member:{team.id}/{member.name}", own, store=store))
        stack.enter_context(tenant(f"team:{team.id}"))
        yield


async def tell_lead(
    client: TeamClient, team: Team, member: Member, exc: BudgetExceededError
) -> None:
    """Tell the lead (a team message it reads like any other) which budget stopped ``member``:
    the budget stop the member's session recorded (``agent.failures.failure_of``: one event,
    which the dashboard lists), rendered as the dashboard renders it."""
    failure = failure_of(exc)
    overrun = failure.budget if failure is not None else None
    if overrun is None:
        return
    text = (
        f"[budget] {member.name} stopped: budget {overrun.budget} is spent "
        f"({overrun.summary()}); raise it or finish without this member"
    )
    await client.send_message(team.id, member.name, team.lead, text)
