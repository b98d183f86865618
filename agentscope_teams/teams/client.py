"""``LocalTeamClient``: the :class:`TeamClient` protocol over any ``BaseStore``.

A client is bound to one :class:`RuntimeContext`; every key it touches is in its owner scope
(:class:`~agentscope_teams.keys.TeamKeys`), so another user's team with the same id is simply absent
(:class:`UnknownTeamError`, which never reveals whether the id exists elsewhere). Each operation loads
the team record to check that the acting member belongs to it, then delegates to
:class:`~.board.TaskBoard` or :class:`~.mailbox.Mailbox`.

After a write that can give a member work (a task assigned, completed, failed, released or
cancelled; a message sent or broadcast) the client signals the team's channel
(:meth:`~agentscope_teams.keys.TeamKeys.signal`) when the store has signals
(:func:`~agentscope_teams.store.base.signals_of`), in one place (:meth:`LocalTeamClient._changed`),
so runtimes waiting on it look at once instead of at their next poll. A failed signal is logged,
never raised: the write happened, and the poll still finds it.

**The team record, read once per team.** Where the board's native queue checks a
:class:`~.queues.base.TeamGuard` (PostgreSQL, Redis), the hot calls (``claim_task`` of the next task,
with ``prefer_own`` too where the queue checks both at once (Redis),
``complete_task``, ``fail_task``) check the member against the team record as this client last
read it, and the queue's statement runs only while the record is still at that version: a team
changed since (deleted, a member removed, anything) makes the statement do nothing, and the client
reads the record again, checks the member again and retries. So a deleted team or a removed member
is refused exactly as before, and a claim + completion costs two statements instead of four.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import anyio

from .. import tracing
from ..context import RuntimeContext
from ..errors import TaskBlockedError, TeamError, UnknownTeamError
from ..hooks import HookOutcome, Hooks
from ..listing import Listing
from ..message import new_id, utcnow
from ..store.base import BaseStore, signals_of
from ..tools.permissions import resolve_mode
from . import expiry
from .actor import TeamActor
from .board import TaskBoard
from .directory import park_record, unpark_record
from .mailbox import Mailbox
from .protocol import TeamClient
from .queues.base import TeamChanged, TeamGuard
from .registry import TeamRegistry
from .rules import limits
from .rules.models import (
    Member,
    MemberStatus,
    MemberStop,
    Task,
    TaskStatus,
    Team,
    TeamMessage,
    TeamStatus,
)
from .rules.transitions import require_owner

log = logging.getLogger(__name__)
_T = TypeVar("_T")
#: The reason of the cancellation of a task whose team was deleted while it was open.
TEAM_DELETED = "its team was deleted"
#: Team records a client keeps for guarded calls (cleared when full: teams per client are few).
_KNOWN_TEAMS = 1024


class LocalTeamClient(TeamRegistry):
    """Teams of ``ctx``'s (org, user) in ``store``; leases default to ``task_lease``.

    What callers hand it is checked against :mod:`.rules.limits` (a bad ``task_lease`` here raises
    :class:`~agentscope_teams.errors.ConfigurationError`). ``lease_seconds=`` is the deprecated
    name of ``task_lease=`` (a ``DeprecationWarning``; see ``docs/deprecation.md``).
    """

    def __init__(
        self,
        store: BaseStore,
        ctx: RuntimeContext,
        *,
        task_lease: float = 60.0,
        clock: Callable[[], datetime] = utcnow,
        hooks: Hooks | None = None,
        lease_seconds: float | None = None,
    ) -> None:
        if lease_seconds is not None:
            warnings.warn(
                "LocalTeamClient(lease_seconds=) is renamed task_lease=; the old name goes in 0.3",
                DeprecationWarning,
                stacklevel=2,
            )
            task_lease = lease_seconds
        super().__init__(store, ctx.owner_scope())
        self.ctx, self.task_lease, self.clock = ctx, limits.config_lease(task_lease), clock
        #: TaskCreated / TaskCompleted fire on these (see :meth:`_task_hook`).
        self.hooks = hooks
        #: team id -> (record, version) as last read, for guarded calls (module docs)
        self._known: dict[str, tuple[Team, int]] = {}
        #: team id -> its board, built once (its queue derives the server's key names)
        self._boards: dict[str, TaskBoard] = {}

    @property
    def lease_seconds(self) -> float:
        """Deprecated name of :attr:`task_lease`."""
        warnings.warn(
            "LocalTeamClient.lease_seconds is renamed task_lease; the old name goes in 0.3",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.task_lease

    def as_member(self, team_id: str, name: str) -> TeamActor:
        """A view acting as ``name`` in ``team_id`` (what tools of that member hold)."""
        return TeamActor(self, team_id, name)

    async def _board(self, team_id: str, *members: str | None) -> tuple[Team, TaskBoard]:
        team = await self._team(team_id)
        for m in members:
            if m is not None:
                self._require(team, m)
        return team, TaskBoard(self.store, self._keys(team_id), self.clock)

    def _board_of(self, team_id: str) -> TaskBoard:
        """The board of ``team_id`` for the hot calls, built once per team (a board holds no
        state of a call; building a native queue's names is most of a Redis claim's CPU)."""
        board = self._boards.get(team_id)
        if board is None:
            if len(self._boards) >= _KNOWN_TEAMS:
                self._boards.clear()
            board = self._boards[team_id] = TaskBoard(self.store, self._keys(team_id), self.clock)
        return board

    async def _guarded(
        self, team_id: str, member: str, *, fresh: bool = False, claiming: bool = False
    ) -> tuple[TaskBoard, TeamGuard | None]:
        """The board of ``team_id`` for ``member``'s hot calls, with a guard when its queue checks
        one (``member`` checked against the record last read, or read now when ``fresh``, when
        not known, or when it lacks ``member``); else the record is read and checked as ever.
        ``claiming``: a :class:`TeamError` if the record says the team has ended (the guard
        makes a claim against a stale record fail, and the caller reads it again)."""
        board = self._board_of(team_id)
        if not board.guards_team:
            team = await self._team(team_id)
            self._require(team, member)
            if claiming:
                _require_claimable(team, member)
            return board, None
        known = None if fresh else self._known.get(team_id)
        if known is None or member not in known[0].participants():
            self._known.pop(team_id, None)
            known = await self._team_entry(team_id)
            self._require(known[0], member)
            if len(self._known) >= _KNOWN_TEAMS:
                self._known.clear()
            self._known[team_id] = known
        if claiming:
            _require_claimable(known[0], member)
        return board, TeamGuard(self._keys(team_id).team(), known[1])

    def _wrote(self, team_id: str, team: Team, version: int) -> None:
        """Keep the record this client wrote (a member's status): its next guarded call need
        not find the guard stale and read the record again."""
        if len(self._known) >= _KNOWN_TEAMS:
            self._known.clear()
        self._known[team_id] = (team, version)

    async def _team_moved(self, team_id: str, guard: TeamGuard) -> bool:
        """Whether the team record is no longer at ``guard``'s version (read again to know)."""
        known = self._known.get(team_id)
        if known is not None and known[1] != guard.version:
            return True  # another call of this client read it anew already
        self._known.pop(team_id, None)
        team, version = await self._team_entry(team_id)  # a deleted team raises here
        self._known[team_id] = (team, version)
        return version != guard.version

    async def _changed(self, team_id: str) -> None:
        """Wake the runtimes serving ``team_id`` (its signal channel), if the store has signals."""
        signals = signals_of(self.store)
        if signals is None:
            return
        try:
            await signals.signal(self._keys(team_id).signal())
        except Exception as exc:  # the write is done; pollers find it
            log.warning("could not signal team %s: %s", team_id, exc)

    async def _mailbox(self, team_id: str, *members: str) -> tuple[Team, Mailbox]:
        team = await self._team(team_id)
        for m in members:
            self._require(team, m)
        return team, Mailbox(self.store, self._keys(team_id))

    async def _still_open(self, team_id: str, box: Mailbox, names: Sequence[str]) -> None:
        """Called after a message was appended to the inboxes of ``names`` of a team that had not
        ended when it was checked: as :meth:`_not_deleted_since` when the team was deleted
        meanwhile, and the end's :class:`TeamError` when it ended meanwhile (the message stays:
        the lead reads what reached it as a late message if its next call came after, but nobody
        may, so the sender is told)."""
        try:
            team = await self._team(team_id)  # one read for both (as is_deleted reads it)
        except UnknownTeamError:
            await self._take_back(team_id, box, names)
        except Exception:  # the store failed: no sign of an end; the message was sent
            return
        else:
            _require_open(team, "it ended while this message was sent: it may stay unread")

    async def _not_deleted_since(self, team_id: str, box: Mailbox, names: Sequence[str]) -> None:
        """Called after a write into the inboxes (or cursors) of ``names``, which was checked
        against the team record before: when the team was deleted since, remove what it wrote and
        raise the deleted team's :class:`UnknownTeamError`.

        A delete marks the record before it removes the inboxes, so either this read comes before
        the mark (then the delete's removal comes after the write, and removes it) or it sees the
        mark (then this call removes it): after ``delete_team`` returns, no write racing it leaves
        an inbox or a cursor behind.
        """
        if await self.is_deleted(team_id):
            await self._take_back(team_id, box, names)

    async def _take_back(self, team_id: str, box: Mailbox, names: Sequence[str]) -> NoReturn:
        """Remove what a write that raced ``delete_team`` left in the inboxes of ``names``, and
        raise the deleted team's :class:`UnknownTeamError`."""
        for name in names:
            await box.delete_inbox(name)
        raise _deleted_meanwhile(team_id)

    async def create_team(
        self,
        name: str,
        lead: str = "lead",
        members: Sequence[Member] = (),
        description: str = "",
        *,
        max_tokens: int | None = None,
        max_budget_usd: float | None = None,
    ) -> Team:
        """A new team; ``max_tokens`` / ``max_budget_usd``: the budget its members share."""
        name = limits.name(name, "team name")
        names = [limits.member_name(lead, "lead"), *(limits.member_name(m.name) for m in members)]
        for m in members:
            if m.spec:
                limits.name(m.spec, f"spec of member {m.name!r}")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise TeamError(f"member names must be unique (and differ from the lead): {dupes}")
        team = Team(
            id=new_id("team-"),
            name=name,
            description=description,
            lead=lead,
            members=list(members),
            trace_context=tracing.carrier(),
            max_tokens=max_tokens,
            max_budget_usd=max_budget_usd,
        )
        await self.store.put(
            self._keys(team.id).team(), team.model_dump_json().encode(), expected_version=0
        )
        await self.store.put(self._registry(team.id), b"{}")
        return team

    async def spawn_member(
        self,
        team_id: str,
        name: str,
        spec: str,
        session_id: str | None = None,
        *,
        permission_mode: str | None = None,
        plan_approval: bool = False,
        max_tokens: int | None = None,
        max_budget_usd: float | None = None,
        lead_mode: str | None = None,
    ) -> Member:
        """Add a member; ``permission_mode`` (Claude Code's names accepted), ``plan_approval``
        and ``lead_mode`` (the mode the lead's session is in) are kept in its record and decide
        how its agent is built (:mod:`.member.builder`); ``max_tokens`` / ``max_budget_usd`` are
        its own budget."""
        return (
            await self.add_member(
                team_id,
                name,
                spec,
                session_id,
                permission_mode=permission_mode,
                plan_approval=plan_approval,
                max_tokens=max_tokens,
                max_budget_usd=max_budget_usd,
                lead_mode=lead_mode,
            )
        )[0]

    async def add_member(
        self,
        team_id: str,
        name: str,
        spec: str,
        session_id: str | None = None,
        *,
        permission_mode: str | None = None,
        plan_approval: bool = False,
        max_tokens: int | None = None,
        max_budget_usd: float | None = None,
        lead_mode: str | None = None,
    ) -> tuple[Member, bool]:
        """:meth:`spawn_member`, and whether this call created the member (False: it existed
        with the same spec). Decided by the conditional write, so one of racing callers wins."""
        limits.member_name(name)
        if spec:
            limits.name(spec, "spec")
        mode = resolve_mode(permission_mode) if permission_mode is not None else None
        lead = resolve_mode(lead_mode) if lead_mode is not None else None
        created = False

        def add(team: Team) -> Team | None:
            nonlocal created
            found = team.member(name)
            created = False
            if found is not None and found.spec == spec and session_id in (None, found.session_id):
                return _resumed(team, found)  # spawned again: a hook's stop is lifted
            if found is not None or name == team.lead:
                raise TeamError(f"team {team.id!r} already has a member named {name!r}")
            new = Member(
                name=name,
                spec=spec,
                permission_mode=mode,
                plan_approval=plan_approval,
                lead_mode=lead,
                max_tokens=max_tokens,
                max_budget_usd=max_budget_usd,
                **({"session_id": session_id} if session_id else {}),
            )
            created = True
            return team.model_copy(update={"members": [*team.members, new]})

        member = (await self._update_team(team_id, add)).member(name)
        assert member is not None
        return member, created

    async def update_member(
        self, team_id: str, name: str, change: Callable[[Member], Member | None]
    ) -> Member:
        """Read-modify-write one member's record (``change`` returns None: nothing to write)."""

        def apply(team: Team) -> Team | None:
            new = change(self._require_member(team, name))
            if new is None:
                return None
            members = [new if m.name == name else m for m in team.members]
            return team.model_copy(update={"members": members})

        member = (await self._update_team(team_id, apply)).member(name)
        assert member is not None
        return member

    async def set_member_status(self, team_id: str, name: str, status: MemberStatus) -> Member:
        """Set a member's status; on a done team only ``stopped`` (else :class:`TeamError`)."""

        def change(team: Team) -> Team | None:
            found = self._require_member(team, name)
            if found.status is status:
                return None
            if not found.takes_work and status is not MemberStatus.STOPPED:
                assert found.stop is not None
                raise TeamError(found.stop.refusal(name))
            if not team.member_status_allowed(status):
                raise TeamError(
                    f"team {team.id!r} is {team.status.value}: its members stay stopped, "
                    f"{name!r} cannot become {status.value}; an operator may set an archived team "
                    "active again, a team its lead ended is over: create a new team for more work"
                )
            members = [
                m.model_copy(update={"status": status}) if m.name == name else m
                for m in team.members
            ]
            return team.model_copy(update={"members": members})

        known = self._known.get(team_id)  # usually current: no read before the write
        member = (await self._update_team(team_id, change, known=known)).member(name)
        assert member is not None
        return member

    async def stop_member(self, team_id: str, name: str, reason: str, *, event: str) -> Member:
        """Stop ``name`` for good because an ``event`` hook answered ``continue: false`` with
        ``reason`` (:class:`~.rules.models.MemberStop`): its record says so in one write, every
        runtime reads it (none wakes it, the one running it ends its call), and the lead is told
        by a message from the member. A member stopped already keeps its first stop."""
        stop = MemberStop(reason=reason or f"stopped by a {event} hook", event=event)

        def change(member: Member) -> Member | None:
            return None if member.stop is not None else member.stopped_by(stop)

        # shielded: the runtime serving the member ends its call once it reads the record,
        # which may be this call's own (a member's completeTask): the lead is told all the same
        with anyio.CancelScope(shield=True):
            member = await self.update_member(team_id, name, change)
            if member.stop is stop:  # this call stopped it
                log.info("member %s of team %s: %s", name, team_id, stop.told(member))
                team = await self._team(team_id)
                try:
                    await self.send_message(team_id, name, team.lead, stop.told(member))
                except TeamError:  # the team ended meanwhile: nobody reads it
                    await self._changed(team_id)
        return member

    async def resume_member(self, team_id: str, name: str) -> Member:
        """Lift the stop of a member a hook stopped (:meth:`stop_member`): it is ``idle`` and new
        work wakes it again. The lead does the same by spawning it again (same spec); a member
        not stopped is returned as it is; an ended team's members stay stopped."""
        _require_active(await self._team(team_id), "its members stay stopped")
        member = (await self._update_team(team_id, lambda t: _resumed(t, t.member(name)))).member(
            name
        )
        if member is None:
            raise TeamError(f"team {team_id!r} has no member named {name!r}")
        await self._changed(team_id)
        return member

    async def set_team_status(self, team_id: str, status: TeamStatus) -> Team:
        """Set the team's status; an end (``completed``, ``archived``, ``done``) marks every
        member ``stopped`` and sets ``ended_at`` in the same write; ``active`` clears it.

        Then an end takes the team's directory record out of the directory, so workers stop
        serving it (its records stay readable), and ``active`` puts it back, so they serve it
        again (:func:`~.directory.park_record`); a repeat of the call finishes either."""
        if status is TeamStatus.DELETED:
            raise TeamError("use delete_team() to delete a team")

        def change(team: Team) -> Team | None:
            new = team.with_status(status, self.clock())
            return None if new == team else new

        team = await self._update_team(team_id, change)
        await self.settle_directory(team_id, team)
        return team

    async def settle_directory(self, team_id: str, team: Team | None = None) -> None:
        """Take ``team_id``'s directory record out of the directory if the team has ended, put it
        back if it is active (:func:`~.directory.park_record`), as ``team`` (else the record read
        now) says; then read the status again and settle once more if it changed meanwhile (an
        end and a reactivation racing), so the last status written decides."""
        team = team or await self._team(team_id)
        while True:
            if team.status.ended:
                await park_record(self.store, self.ctx, team_id)
            else:
                await unpark_record(self.store, self.ctx, team_id)
            now = await self._team(team_id)
            if now.status.ended == team.status.ended:
                return
            team = now

    async def delete_team(self, team_id: str) -> None:
        """Mark the team deleted, then remove its records (its directory record and its members'
        leases too: ``docs/teams.md`` says what a store keeps of a stream); safe to call
        again after a crash. A send, broadcast, acknowledgement or task assignment racing it
        looks at the record again after its write and removes what it wrote if the team was
        deleted meanwhile (:meth:`_not_deleted_since`): once this returns, nothing of the team
        is left, and the racing call raises :class:`UnknownTeamError`."""
        team = await self._team(team_id, allow_deleted=True)
        if team.status is not TeamStatus.DELETED:  # its inboxes: those of the record marked
            team = await self._update_team(
                team_id,
                lambda t: t.with_status(TeamStatus.DELETED, self.clock()),
                allow_deleted=True,
            )
        keys = self._keys(team_id)
        await self._end_open_tasks(team)
        await self._remove_board(team_id)
        for name in team.participants():
            await Mailbox(self.store, keys).delete_inbox(name)
            # a member lease outlives its process by its TTL (and a SQL or file store keeps an
            # expired one until it is written again): a worker still running the member loses it
            await self.store.delete(keys.member_lease(name))
        await self.store.delete(self._registry(team_id))
        await self.store.delete(keys.directory())  # a local team's: no worker removes it
        await self.store.delete(keys.team())

    async def _end_open_tasks(self, team: Team) -> None:
        """With TaskCompleted hooks: cancel each task of ``team`` (marked deleted) still pending or
        in progress, and fire the hooks for those this call cancelled, so each TaskCreated has its
        TaskCompleted (once: a racing delete, or a completion that won, ended it). Without such
        hooks the records are just removed."""
        if not expiry.watched(self.hooks):
            return
        board = TaskBoard(self.store, self._keys(team.id), self.clock)
        for task in await board.open_board():
            try:
                task, changed = await board.cancelled(team.lead, task.id, TEAM_DELETED)
            except TeamError:  # finished meanwhile: its own end fired the hooks
                continue
            if changed:
                await self._task_hook("TaskCompleted", team.id, task, task.owner, "cancelled")

    async def _remove_board(self, team_id: str) -> None:
        """Remove the task board of a team marked deleted: its queue's index, every record
        under the team's prefix but the team record (removed last, by :meth:`delete_team`), and
        the task seq stream."""
        keys = self._keys(team_id)
        await TaskBoard(self.store, keys, self.clock).drop_index()
        after = None
        while page := await self.store.list_keys(keys.base, limit=500, after=after):
            for key in page:
                if key != keys.team():
                    await self.store.delete(key)
            after = page[-1]
        await self.store.delete_stream(keys.task_seq())

    async def assign_task(
        self,
        team_id: str,
        title: str,
        description: str = "",
        assignee: str | None = None,
        blocked_by: Sequence[str] = (),
        max_attempts: int = 3,
        *,
        actor: str | None = None,
        result_schema: Mapping[str, Any] | None = None,
    ) -> Task:
        """Put a task on the board; ``assignee`` must be a spawned member (or None: any member
        may claim it). The lead is no member: it runs no member runtime and has no claim or
        complete tools, so a task assigned to it would stay pending for good; naming it raises a
        :class:`TeamError` that names the members it may assign to instead."""
        team, board = await self._board(team_id, actor, assignee)
        if assignee == team.lead:
            raise TeamError(_lead_assigned(team))
        _require_active(
            team,
            "no task was added, since its members are stopped and nobody would claim it; the "
            "lead starts new work with createTeam (an operator may set an archived team active "
            "again first)",
        )
        draft = await board.draft(
            actor or team.lead,
            title,
            description,
            assignee=assignee,
            blocked_by=blocked_by,
            max_attempts=max_attempts,
            task_lease=self.task_lease,
            result_schema=result_schema,
        )
        try:
            await self._task_hook("TaskCreated", team_id, draft, draft.assignee, refuse=True)
        except TaskBlockedError:  # its TaskCreated fired: so does its end (they always pair)
            await self._task_hook(
                "TaskCompleted", team_id, draft, draft.assignee, "cancelled", obey=False
            )
            raise
        task = await board.publish(draft)
        if await self.is_deleted(team_id):  # deleted meanwhile: see _not_deleted_since
            await self._remove_board(team_id)
            raise _deleted_meanwhile(team_id)
        await self._changed(team_id)
        return task

    async def _task_hook(
        self,
        event: str,
        team_id: str,
        task: Task,
        member: str | None,
        status: str = "",
        *,
        obey: bool = True,
        refuse: bool = False,
    ) -> HookOutcome:
        """Fire ``event`` (TaskCreated / TaskCompleted) for ``task``; nothing without hooks.
        With ``obey``, a ``continue: false`` answer stops ``member`` now (:meth:`_obey_stop`).
        With ``refuse`` (a TaskCreated fired for a :meth:`~.board.TaskBoard.draft`, before it is
        on the board), exit 2 or ``decision: "block"`` raises :class:`TaskBlockedError`: the
        draft is never published, so no reader, claimer, blocker or wake-up ever meets it."""
        if not self.hooks:
            return HookOutcome()
        outcome = await self.hooks.fire(event, self._task_payload(team_id, task, member, status))
        if obey:
            await self._obey_stop(event, team_id, member, outcome)
        if refuse and outcome.blocked:
            raise TaskBlockedError(task.title, outcome.reason, outcome.blocked_by)
        return outcome

    async def _obey_stop(
        self, event: str, team_id: str, member: str | None, outcome: HookOutcome
    ) -> None:
        """A task hook's ``continue: false`` stops the member the event names
        (``teammate_name``: a completion's or failure's member, a cancelled or lapsed task's
        owner, a new task's assignee). An event that names no member (a task for anyone, one
        cancelled before anyone claimed it) stops nobody: that is logged. Never raises: the
        task's transition happened."""
        if not outcome.stop:
            return
        if member is None:
            log.warning("a %s hook answered continue: false for no member: nobody stopped", event)
            return
        try:
            await self.stop_member(team_id, member, outcome.stop_reason, event=event)
        except (TeamError, UnknownTeamError) as exc:  # not a member (the lead), or no team
            log.warning("a %s hook could not stop %s: %s", event, member, exc)

    def _task_payload(
        self, team_id: str, task: Task, member: str | None, status: str
    ) -> dict[str, Any]:
        assert self.hooks is not None
        payload: dict[str, Any] = {
            "session_id": self.ctx.session_id,
            "cwd": str(self.hooks.project_dir),
            "task_id": task.id,
            "task_subject": task.title,
            "task_description": task.description,
            "teammate_name": member,
            "team_name": team_id,
        }
        if status:
            payload["status"] = status
        return payload

    async def claim_task(
        self,
        team_id: str,
        member: str,
        task_id: str | None = None,
        *,
        task_lease: float | None = None,
        prefer_own: bool = False,
    ) -> Task | None:
        if expiry.watched(self.hooks):  # lapsed leases swept (and reported) first: see .expiry
            view = await expiry.pinned(self, team_id)
            return await view.claim_task(
                team_id, member, task_id, task_lease=task_lease, prefer_own=prefer_own
            )
        lease = self.task_lease if task_lease is None else task_lease
        if task_id is None:
            claimed = await self._claim_guarded(team_id, member, lease, prefer_own)
        else:
            team, board = await self._board(team_id, member)
            _require_claimable(team, member)
            claimed = await board.claim(member, task_id, lease)
        tracing.task_event(tracing.names.TASK_CLAIM, team_id, member, claimed)
        return claimed

    async def _claim_guarded(
        self, team_id: str, member: str, lease: float, prefer_own: bool
    ) -> Task | None:
        """The next task (``prefer_own``: one ``member`` holds first), the team record checked by
        the claim itself when the queue can."""
        board, guard = await self._guarded(team_id, member, claiming=True)
        claimed = await board.claim_next(member, lease, prefer_own=prefer_own, guard=guard)
        if claimed is None and guard is not None and await self._team_moved(team_id, guard):
            board, guard = await self._guarded(team_id, member, claiming=True)  # checked anew
            claimed = await board.claim_next(member, lease, prefer_own=prefer_own, guard=guard)
        return claimed

    async def _finish_guarded(
        self,
        team_id: str,
        member: str,
        finish: Callable[[TaskBoard, TeamGuard | None], Awaitable[_T]],
    ) -> _T:
        """``finish`` (a completion or failure) with a guard; once more after a fresh read of the
        team record (the member checked anew) when the record moved on. The team's waiters are
        woken after, unless the board's finish statement woke them itself."""
        board, guard = await self._guarded(team_id, member)
        try:
            task = await finish(board, guard)
        except TeamChanged:
            board, _ = await self._guarded(team_id, member, fresh=True)
            task = await finish(board, None)  # checked just now: as every other call is
        if not board.signals_finish:
            await self._changed(team_id)
        return task

    async def complete_task(
        self, team_id: str, member: str, task_id: str, result: str = "", *, data: Any = None
    ) -> Task:
        gate = HookOutcome()
        if self.hooks and self.hooks.by_event.get("TaskCompleted"):  # a quality gate
            _, board = await self._board(team_id, member)
            task = await board.get(task_id)
            require_owner(task, member, "complete")  # not for a completion the board refuses
            gate = await self._task_hook(
                "TaskCompleted", team_id, task, member, "completed", obey=False
            )
            if gate.blocked or gate.stop:  # continue: false must not let the completion through
                await self._refused_completion(team_id, member, task_id, gate)
        task = await self._finish_guarded(
            team_id, member, lambda b, g: b.complete(member, task_id, result, data, guard=g)
        )
        tracing.task_event(tracing.names.TASK_FINISH, team_id, member, task)
        return task

    async def _refused_completion(
        self, team_id: str, member: str, task_id: str, gate: HookOutcome
    ) -> NoReturn:
        """A completion a TaskCompleted hook refused (exit 2, ``decision: "block"``, or ``continue:
        false``: a gate that says no, e.g. a prompt hook's ``ok: false``, never lets the completion
        through, where Claude Code would count it): the task stays open. With ``continue: false``
        the member stops too, so the task goes back to pending for another member (a stopped
        member would hold it until its lease ran out)."""
        if gate.stop:
            _, board = await self._board(team_id, member)
            await board.release(member, task_id)
            await self._obey_stop("TaskCompleted", team_id, member, gate)
            await self._changed(team_id)
        stopped = " and stopped you; the task went back to the board" if gate.stop else ""
        raise TeamError(
            f"task {task_id!r} stays open: a TaskCompleted hook refused its completion"
            f"{stopped}: {gate.reason or gate.stop_reason}"
        )

    async def fail_task(self, team_id: str, member: str, task_id: str, error: str) -> Task:
        """Fail an owned task; TaskCompleted fires for the failure, not for a repeat of it."""
        task, changed = await self._finish_guarded(
            team_id, member, lambda b, g: b.failed(member, task_id, error, guard=g)
        )
        tracing.task_event(tracing.names.TASK_FINISH, team_id, member, task)
        if changed:
            await self._task_hook("TaskCompleted", team_id, task, member, str(task.status))
        return task

    async def release_task(self, team_id: str, member: str, task_id: str) -> Task:
        _, board = await self._board(team_id, member)
        task = await board.release(member, task_id)
        await self._changed(team_id)
        return task

    async def renew_task_lease(
        self, team_id: str, member: str, task_id: str, *, task_lease: float | None = None
    ) -> Task:
        _, board = await self._board(team_id, member)
        return await board.renew_lease(member, task_id, task_lease)

    async def cancel_task(
        self, team_id: str, task_id: str, *, actor: str | None = None, reason: str = ""
    ) -> Task:
        team, board = await self._board(team_id, actor)
        if actor not in (None, team.lead):
            raise TeamError(f"only the lead {team.lead!r} may cancel tasks, not {actor!r}")
        task, changed = await board.cancelled(team.lead, task_id, reason)
        await self._changed(team_id)
        if changed:  # a repeated cancel ended nothing: its hooks fired with the first
            await self._task_hook("TaskCompleted", team_id, task, task.owner, str(task.status))
        return task

    async def get_task(self, team_id: str, task_id: str) -> Task:
        _, board = await self._board(team_id)
        return await board.get(task_id)

    async def list_tasks(self, team_id: str, status: TaskStatus | None = None) -> Listing[Task]:
        _, board = await self._board(team_id)
        return await board.list_tasks(status)

    async def open_board(self, team_id: str) -> Listing[Task]:
        _, board = await self._board(team_id)
        return await board.open_board()

    async def reap_expired(self, team_id: str) -> list[Task]:
        _, board = await self._board(team_id)
        reaped = await board.reap_expired()
        await expiry.report(self, team_id, reaped)  # TaskCompleted for the tasks it failed
        return reaped

    async def wait_for_tasks(self, team_id: str, timeout: float) -> bool:  # noqa: ASYNC109
        """Poll (with backoff) until no task is pending or in progress; False at the deadline.

        ``timeout`` is a deadline that yields False (not an exception), so it stays a parameter.
        """
        timeout = limits.timeout(timeout)
        _, board = await self._board(team_id)
        deadline, delay = anyio.current_time() + timeout, 0.05
        while await board.open_tasks():
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                return False
            await anyio.sleep(min(delay, remaining))
            delay = min(delay * 2, 1.0)
        return True

    async def send_message(self, team_id: str, sender: str, to: str, content: str) -> TeamMessage:
        """Append ``content`` to ``to``'s inbox. A team that ended takes no more messages (its
        members are stopped and its lead reads its inbox once more only): a :class:`TeamError`
        that says so, rather than a message nobody reads (``docs/teams.md``)."""
        team, box = await self._mailbox(team_id, sender, to)
        if to == sender:
            raise TeamError(f"{sender!r} cannot send a message to itself")
        _require_open(team)
        message = await box.deliver(sender, to, content)
        await self._still_open(team_id, box, [to])
        await self._changed(team_id)
        return message

    async def broadcast_message(self, team_id: str, sender: str, content: str) -> list[TeamMessage]:
        """:meth:`send_message` to every participant but ``sender``."""
        team, box = await self._mailbox(team_id, sender)
        _require_open(team)
        others = [p for p in team.participants() if p != sender]
        messages = await box.broadcast(sender, others, content)
        await self._still_open(team_id, box, others)
        await self._changed(team_id)
        return messages

    async def read_messages(
        self, team_id: str, member: str, *, after: int = 0, limit: int = 100
    ) -> Listing[TeamMessage]:
        _, box = await self._mailbox(team_id, member)
        return await box.read(member, after=after, limit=limit)

    async def acknowledge(self, team_id: str, member: str, cursor: int) -> int:
        _, box = await self._mailbox(team_id, member)
        try:
            acknowledged = await box.acknowledge(member, cursor)
        except TeamError:  # no message at the cursor: maybe a delete removed the inbox since
            await self._not_deleted_since(team_id, box, [member])
            raise
        await self._not_deleted_since(team_id, box, [member])
        return acknowledged

    async def unread(self, team_id: str, member: str, *, limit: int = 100) -> Listing[TeamMessage]:
        _, box = await self._mailbox(team_id, member)
        return await box.unread(member, limit=limit)


def _resumed(team: Team, member: Member | None) -> Team | None:
    """``team`` with ``member``'s hook stop lifted (None: nothing to write)."""
    if member is None or member.stop is None:
        return None
    members = [member.resumed() if m.name == member.name else m for m in team.members]
    return team.model_copy(update={"members": members})


def _deleted_meanwhile(team_id: str) -> UnknownTeamError:
    """The error of a write that raced ``delete_team`` (what it wrote was removed again)."""
    return UnknownTeamError(
        f"team {team_id!r} was deleted while this call wrote to it; nothing of it was kept: "
        "create a new team (createTeam) to go on"
    )


def _require_open(team: Team, what: str = "nothing was sent") -> None:
    """A :class:`TeamError` when ``team`` has ended, telling a sender ``what`` became of its
    message."""
    _require_active(
        team,
        f"its members are stopped and nobody reads its messages any more, so {what}. A task's "
        "result still goes on its board (completeTask), which an ended team keeps; the lead "
        "starts new work with createTeam",
    )


def _require_claimable(team: Team, member: str) -> None:
    """A :class:`TeamError` when ``team`` has ended (its tasks stay on its board, unclaimed), or
    when a hook stopped ``member`` (:attr:`~.rules.models.Member.takes_work`)."""
    _require_active(
        team,
        "its tasks are no longer claimed; finish the task you hold (completeTask or failTask) "
        "and stop",
    )
    found = team.member(member)
    if found is not None and not found.takes_work:
        assert found.stop is not None
        raise TeamError(found.stop.refusal(member))


def _require_active(team: Team, refused: str) -> None:
    """The one refusal of a call an ended team no longer takes: ``refused`` says what to do."""
    if team.status.ended:
        raise TeamError(f"team {team.id!r} has ended ({team.status.value}): {refused}")


def _lead_assigned(team: Team) -> str:
    """Why a task cannot be assigned to ``team``'s lead, and whom to assign it to."""
    head = (
        f"{team.lead!r} is the lead of team {team.id!r}, not a member: the lead does not claim "
        f"or complete tasks, so a task assigned to it would never start"
    )
    if not team.members:
        return (
            f"{head}; the team has no members yet: spawnMember first and assign the task to the "
            f"new member, or do the work yourself"
        )
    names = ", ".join(repr(m.name) for m in team.members)
    return f"{head}; assign it to {names}, or omit assignee to let any member claim it"


if TYPE_CHECKING:
    _conforms: type[TeamClient] = LocalTeamClient  # mypy checks every signature of the protocol
