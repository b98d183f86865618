"""The member review route: plan approval and refused prompts for members on the HTTP client.

``POST /api/teams/{team_id}/members/{name}/review`` with a
:class:`~agentscope_teams.teams.member.review_remote.ReviewRequest`: the member (its token, or an
operator) records its plan (``request_plan``), takes its approved plan (``take_approved``) or notes
a refused prompt (``note_prompt``); the lead (or an operator) answers a plan (``answer_plan``).
:func:`review_member` only checks who may ask; the change itself is
:func:`~agentscope_teams.teams.member.review.serve_review`, the same code a store-backed member
runs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends

from ..teams.member.review import serve_review
from ..teams.member.review_remote import ReviewAnswer, ReviewRequest
from .routing import ERROR_RESPONSES, ApiRoute, Call, token_call

PATH = "/api/teams/{team_id}/members/{name}/review"
TokenCall = Annotated[Call, Depends(token_call)]

router = APIRouter(route_class=ApiRoute, tags=["teams"], responses=ERROR_RESPONSES)


@router.post(
    PATH,
    summary="Record a member's plan or refused prompt, or the lead's answer to its plan",
    response_model=ReviewAnswer,
)
async def review_member(
    team_id: str, name: str, body: ReviewRequest, call: TokenCall
) -> ReviewAnswer:
    if body.action == "answer_plan":
        actor = (await call.require_lead("answer a member's plan")).lead
    else:
        actor = await call.acting(name)
    return await serve_review(call.client, call.team_id, actor, name, body)
