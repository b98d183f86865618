"""Plan approval and refused prompts for a member whose team client is remote (the control plane's
HTTP client): the record changes of :mod:`.review` run where the store is.

A store-backed client (:class:`~.client.LocalTeamClient`) changes the member record itself. A
client without the store (:class:`~agentscope_teams.server.ControlPlaneTeamClient`) sends one
:class:`ReviewRequest` per change instead (:class:`RemoteReviews`); the server checks who may ask
(the member for its own plan and prompts, the lead for its answer) and runs the same functions of
:mod:`.review` with a store-backed client through :func:`.review.serve_review`. So the rules have one home,
whichever client a member uses.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from ..actor import TeamActor
from ..rules.models import Member, PlanReview

ReviewAction = Literal["request_plan", "answer_plan", "take_approved", "note_prompt"]


class ReviewRequest(BaseModel):
    """One change of a member's review records: ``request_plan`` (``plan``), ``answer_plan``
    (the lead's ``approve`` and ``feedback``), ``take_approved``, ``note_prompt`` (``tool``)."""

    model_config = ConfigDict(extra="forbid")
    action: ReviewAction
    plan: str | None = Field(default=None, min_length=1, max_length=100_000)
    approve: bool | None = None
    feedback: str = Field(default="", max_length=100_000)
    tool: str | None = Field(default=None, min_length=1, max_length=256)


class ReviewAnswer(BaseModel):
    """What a change gave: the plan review (request_plan, answer_plan) or the member whose approved
    plan was just taken (take_approved; None when there was none)."""

    plan: PlanReview | None = None
    member: Member | None = None


@runtime_checkable
class RemoteReviews(Protocol):
    """A team client that has the server change review records (see the module docs)."""

    async def review_member(
        self, team_id: str, name: str, request: ReviewRequest
    ) -> ReviewAnswer: ...


def remote_of(view: TeamActor) -> RemoteReviews | None:
    """``view``'s client when it changes review records through a server, else None."""
    client = view.client
    if hasattr(client, "update_member") or not isinstance(client, RemoteReviews):
        return None
    return client
