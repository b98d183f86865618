"""What a team member cannot decide alone: leaving plan mode (the lead approves its plan) and calls
that would ask for permission (a member has no user: they are refused and shown to the lead).

Both live in the member's record in the store (:class:`~..rules.models.PlanReview`,
:class:`~..rules.models.PermissionPrompt`), so they survive a restart of any process:

- the member's ``exit_plan_mode(plan)`` (:func:`member_exit_plan_tool`) records the plan as
  ``pending`` and sends it to the lead as a message; the member ends its turn (its tasks stay
  claimed) and waits;
- the lead answers with ``approvePlan(member, approve, feedback)`` (:func:`answer_plan`), which
  records the answer and messages the member, which wakes it;
- before each step of the member, :func:`take_approved` turns an ``approved`` review into
  ``applied`` and the member's session leaves plan mode (``PermissionContext.mode_chosen``);
  a rejected member stays in plan mode and reads the feedback in the message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Protocol

from pydantic import Field

from ...errors import TeamError, ToolError
from ...state import PermissionMode
from ...tools import Tool
from ...tools.base import ToolEnv
from ...tools.decorator import make_tool
from ...tools.plan import session_state
from ..actor import TeamActor
from ..protocol import TeamClient
from ..rules.models import Member, PermissionPrompt, PlanReview, Team
from .review_remote import ReviewAnswer, ReviewRequest, remote_of

PLAN_REQUEST = "[plan approval request]"


class MemberUpdater(Protocol):
    async def update_member(
        self, team_id: str, name: str, change: Callable[[Member], Member | None]
    ) -> Member: ...


def _updater(view: TeamActor) -> MemberUpdater:
    client = view.client
    if not hasattr(client, "update_member"):
        raise TeamError(
            f"plan approval and permission status need a store-backed team client or one that "
            f"asks the control plane; {type(client).__name__} does neither"
        )
    return client  # type: ignore[return-value]


def _plan(answer: ReviewAnswer) -> PlanReview:
    if answer.plan is None:
        raise TeamError("the control plane answered a plan change without the plan")
    return answer.plan


def member_notes(team: Team) -> list[str]:
    """What the lead should know about its members: plans waiting for approvePlan, the last
    call each member was refused for want of someone to approve it, and the members a hook
    stopped (``continue: false``) with why."""
    notes = [m.stop.told(m) for m in team.members if m.stop is not None]
    for m in team.members:
        if m.plan is not None and m.plan.status == "pending":
            notes.append(
                f"{m.name}: plan waiting for your approvePlan since {m.plan.at:%H:%M:%S} UTC"
            )
        if m.permission_prompt is not None:
            notes.append(
                f"{m.name}: {m.permission_prompt.tool} refused at "
                f"{m.permission_prompt.at:%H:%M:%S} UTC (it needs approval and a member has "
                "no one to ask; allow it with a rule or do it yourself)"
            )
    return notes


def mode_after_plan(member: Member | None) -> PermissionMode:
    """The mode a member works in once its plan is approved: its spawn mode unless that is plan."""
    mode = member.permission_mode if member is not None else None
    return mode if mode is not None and mode != "plan" else "default"


async def request_plan(view: TeamActor, plan: str) -> PlanReview:
    """Record ``plan`` as pending for the lead and send it to the lead."""
    if (remote := remote_of(view)) is not None:  # the server runs this (.review_remote)
        asked = ReviewRequest(action="request_plan", plan=plan)
        return _plan(await remote.review_member(view.team_id, view.name, asked))
    review = PlanReview(plan=plan)

    def change(m: Member) -> Member | None:
        if m.plan is not None and m.plan.status == "pending" and m.plan.plan == plan:
            return None
        return m.model_copy(update={"plan": review})

    member = await _updater(view).update_member(view.team_id, view.name, change)
    team = await view.team()
    await view.send(
        team.lead,
        f"{PLAN_REQUEST} {view.name} asks to leave plan mode with this plan:\n{plan}\n"
        f'Answer with approvePlan(member="{view.name}", approve=true|false, feedback=...).',
    )
    assert member.plan is not None
    return member.plan


async def answer_plan(
    view: TeamActor, member_name: str, approve: bool, feedback: str = ""
) -> PlanReview:
    """The lead's answer to ``member_name``'s pending plan; the member gets it as a message."""
    if (remote := remote_of(view)) is not None:
        answer = ReviewRequest(action="answer_plan", approve=approve, feedback=feedback)
        return _plan(await remote.review_member(view.team_id, member_name, answer))

    def change(m: Member) -> Member | None:
        if m.plan is None or m.plan.status != "pending":
            raise TeamError(
                f"{member_name!r} has no plan waiting for approval; it sends one with exit_plan_mode"
            )
        status = "approved" if approve else "rejected"
        plan = m.plan.model_copy(update={"status": status, "feedback": feedback})
        return m.model_copy(update={"plan": plan})

    member = await _updater(view).update_member(view.team_id, member_name, change)
    if approve:
        text = "The lead approved your plan: plan mode is off, carry it out."
    else:
        text = "The lead rejected your plan; you stay in plan mode (read-only). Feedback: "
        text += (feedback or "none given") + "\nRevise the plan and send it with exit_plan_mode."
    if approve and feedback:
        text += f" Feedback: {feedback}"
    await view.send(member_name, text)
    assert member.plan is not None
    return member.plan


async def take_approved(view: TeamActor) -> Member | None:
    """The member's record if its plan was approved and not applied yet (it is marked applied)."""
    if (remote := remote_of(view)) is not None:
        take = ReviewRequest(action="take_approved")
        return (await remote.review_member(view.team_id, view.name, take)).member
    taken: list[Member] = []

    def change(m: Member) -> Member | None:
        if m.plan is None or m.plan.status != "approved":
            return None
        taken.append(m)
        return m.model_copy(update={"plan": m.plan.model_copy(update={"status": "applied"})})

    await _updater(view).update_member(view.team_id, view.name, change)
    return taken[-1] if taken else None


async def note_prompt(view: TeamActor, tool: str) -> None:
    """Show the lead that ``tool`` was refused to this member for want of someone to approve it."""
    if (remote := remote_of(view)) is not None:
        noted = ReviewRequest(action="note_prompt", tool=tool)
        await remote.review_member(view.team_id, view.name, noted)
        return
    prompt = PermissionPrompt(tool=tool)
    await _updater(view).update_member(
        view.team_id, view.name, lambda m: m.model_copy(update={"permission_prompt": prompt})
    )


def member_exit_plan_tool(view: TeamActor) -> Tool:
    """``exit_plan_mode`` for a member: the plan goes to the lead instead of to a user."""

    async def exit_plan_mode(plan: Annotated[str, Field(min_length=1)], *, env: ToolEnv) -> str:
        """Send your plan to the team lead for approval; plan mode ends once the lead approves.

        Args:
            plan: The plan, concise, in Markdown.
        """
        context = session_state(env).permission_context
        engine = getattr(env.extras.get("agent"), "permissions", None)
        mode = engine.effective_mode(context) if engine is not None else context.mode
        if mode != "plan":
            return "You are not in plan mode: carry out your plan."
        try:
            await request_plan(view, plan)
        except TeamError as exc:
            raise ToolError(str(exc)) from None
        return (
            "Your plan was sent to the lead for approval. End your turn now without reporting "
            "your task: the lead's answer comes as a message, and you stay in plan mode until "
            "it approves."
        )

    return make_tool(exit_plan_mode, read_only=True)


#: A member's refusal of every call that would ask (a member has no user: a prompt would wait for
#: nobody); its extension records the refused tools in its member record (:func:`note_prompt`).
MEMBER_UNATTENDED = (
    "no one can approve {tool} for a team member ({reason}); do without it, or ask the lead with "
    "sendMessage (the lead sees this refusal in your record)"
)


async def serve_review(
    client: TeamClient, team_id: str, actor: str, name: str, request: ReviewRequest
) -> ReviewAnswer:
    """Run ``request`` for member ``name`` with a store-backed ``client``, acting as ``actor``
    (the caller checked that ``actor`` may: ``name`` itself, or the lead for ``answer_plan``)."""
    if request.action == "answer_plan":
        if request.approve is None:
            raise ValueError("answer_plan needs approve (true or false)")
        view = TeamActor(client, team_id, actor)
        return ReviewAnswer(plan=await answer_plan(view, name, request.approve, request.feedback))
    view = TeamActor(client, team_id, name)
    if request.action == "request_plan":
        if request.plan is None:
            raise ValueError("request_plan needs the plan")
        return ReviewAnswer(plan=await request_plan(view, request.plan))
    if request.action == "take_approved":
        return ReviewAnswer(member=await take_approved(view))
    if request.tool is None:
        raise ValueError("note_prompt needs the tool that was refused")
    await note_prompt(view, request.tool)
    return ReviewAnswer()
