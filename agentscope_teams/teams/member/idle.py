"""TeammateIdle: the hooks of a member about to go idle, with Claude Code's answers.

A member goes idle when its turn (its call) ended and the board has nothing for it: no unread
message, no task it may claim, none it holds unreported (:func:`~.work.find_work`; with any of
those the runtime wakes it again, so it is not idle). A task it was offered in 1 +
:data:`~.slot.MAX_REWAKES` turns in a row that claimed or reported none is left out
(:func:`settle`). Then its ``TeammateIdle`` hooks run, with Claude Code's input: ``session_id`` (the lead's), ``cwd`` (the member's workspace),
``permission_mode``, ``teammate_name``, ``team_name`` (the team id); there is no matcher. Their
answer, as in Claude Code:

- exit 2 (or ``decision: "block"``): the member does not go idle; it works on in the same call,
  with the hook's stderr (or ``reason``) as its next prompt;
- ``continue: false``: the member stops without another turn, for good (Claude Code stops the
  teammate entirely): :meth:`~..client.LocalTeamClient.stop_member` records the ``stopReason``,
  tells the lead, and no process wakes the member again until the lead spawns it again;
- anything else: it goes idle.

A member whose team ended (or was deleted) during the call, or that a TaskCompleted hook stopped
during it, is stopped, not idle: no hook fires, and it gets no more turns. A hook that blocks :data:`MAX_IDLE_BLOCKS` times in a row is not obeyed once more: the member goes
idle and the lead is told why (Claude Code has no bound, so such a hook loops for ever).
"""

from __future__ import annotations

import logging

from ...context import RuntimeContext
from ...errors import UnknownTeamError
from ...hooks import HookOutcome, claude_mode
from ...message import UserMsg, utcnow
from ..protocol import TeamClient
from ..rules.models import Member, Team
from .slot import MAX_REWAKES, Slot
from .work import OfferKey, Work, find_work, offer_key

log = logging.getLogger(__name__)

EVENT = "TeammateIdle"
#: The most turns in a row a TeammateIdle hook may add by blocking before the member goes idle.
MAX_IDLE_BLOCKS = 8


async def call_until_idle(
    slot: Slot, client: TeamClient, team: Team, member: Member, work: Work, ctx: RuntimeContext
) -> None:
    """Call the member with ``work``'s prompt, then again with each TeammateIdle hook's feedback
    while one keeps it from going idle (see the module docs). After each turn the offers of
    ``work`` are settled (:func:`settle`), so "not idle" is what the runtime's next step sees."""
    agent, ext = slot.agent, slot.ext
    assert agent is not None and ext is not None
    prompt = work.message()
    for _ in range(MAX_IDLE_BLOCKS + 1):
        moved = ext.moved
        await agent.call(prompt, ctx)
        await settle(slot, client, team, member, work.offers, moved=ext.moved != moved)
        if not agent.hooks.by_event.get(EVENT):
            return
        board = await client.open_board(team.id)
        if await find_work(client, team, member.name, board, slot.offered):
            return  # not idle: the runtime wakes it for that work
        if await _stopped(client, team, member.name):
            return  # stopped during the call, not idle (no hook, no more turns)
        outcome = await _fire(slot, team, member)
        if outcome.stop:
            await client.stop_member(team.id, member.name, outcome.stop_reason, event=EVENT)
            return
        if not outcome.blocked:
            return
        prompt = UserMsg(outcome.reason, name="hook")
    note = f"its {EVENT} hooks kept it working {MAX_IDLE_BLOCKS} times in a row; it goes idle now"
    log.warning("member %s of team %s: %s", member.name, team.id, note)
    await ext.view.send(team.lead, f"{member.name}: {note}")


async def settle(
    slot: Slot, client: TeamClient, team: Team, member: Member, offers: set[OfferKey], moved: bool
) -> None:
    """A turn offered ``offers`` ended (``moved``: it claimed or reported a task): offer them again
    (:meth:`~.slot.Slot.reoffer`). The open tasks assigned to the member or held by it whose
    offers are given up are named to the lead: the team waits on them, and the member is not
    woken for them again until they change or a message wakes it."""
    given_up = slot.reoffer(offers, moved)
    if not given_up:
        return
    now = utcnow()
    ids = [
        t.id
        for t in await client.open_board(team.id)
        if member.name in (t.assignee, t.owner) and offer_key(t, now) in given_up
    ]
    if not ids:
        return
    names = ", ".join(ids)
    note = (
        f"{member.name} ended {MAX_REWAKES + 1} turns in a row without taking {names} (offered "
        f"to it each time); it is not woken for them again until they change or a message wakes "
        f"it: reassign them, or message {member.name}"
    )
    log.warning("member %s of team %s: %s", member.name, team.id, note)
    assert slot.ext is not None
    await slot.ext.view.send(team.lead, note)


async def _stopped(client: TeamClient, team: Team, name: str) -> bool:
    """Whether ``team`` has ended (or was deleted) since the call began, or a hook stopped member
    ``name`` during it: read afresh, as an operator's archive or the lead's end lands while a
    member works."""
    try:
        now = await client.get_team(team.id)
    except UnknownTeamError:
        return True
    found = now.member(name)
    return now.status.ended or found is None or not found.takes_work


async def _fire(slot: Slot, team: Team, member: Member) -> HookOutcome:
    agent = slot.agent
    assert agent is not None
    payload: dict[str, object] = {
        "session_id": slot.ref.ctx.session_id,
        "cwd": str(slot.ref.builder.workspace_of(slot.ref.ctx, team.id, member)),
        "permission_mode": claude_mode(agent.loop.permissions.mode),
        "teammate_name": member.name,
        "team_name": team.id,
    }
    return await agent.hooks.fire(EVENT, payload, servers=agent.hook_servers(slot.ref.ctx))
