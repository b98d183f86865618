"""``TeamRuntime``: runs team members in this process, one member per process at a time.

A supervisor loop looks at every team it serves (``watch``-ed by the lead, or found by a worker's
``discover``) every ``poll`` seconds, or at once after :meth:`TeamRuntime.nudge`. Per team it reads
the unfinished tasks once (:meth:`~..protocol.TeamClient.open_board`, through the open index: the
cost grows with unfinished tasks, not with the board's history); then, for each member that is not
busy, its unread messages, to find new work (:mod:`.work`: messages, and tasks it may take that it
was not offered yet, or offered again after a turn that left them, :meth:`.slot.Slot.reoffer`). With work, it takes the member's **lease** (a store key with a TTL, written
with ``expected_version=0``; see :class:`~agentscope_teams.agent.lease.Lease`) unless it holds it
already, and starts ``member.call("You have new work: ...")`` in an asyncio task (strong refs,
fresh contextvars). Status goes ``running`` during a call and ``idle`` after it.

A heartbeat renews every held lease each ``lease_ttl / 3`` seconds and the task leases of the tasks
a busy member holds. A lost lease (another process took the member after this one stalled) cancels
the member's call. A member idle for ``idle_release`` seconds gives its lease back, so a worker's
capacity (``max_members``) goes to members with work. If the process dies, its leases expire and
another process takes the members; the same member name claims its in-progress tasks again.

A member shown ``running`` whose lease nobody holds (the process running it died) is shown
``idle`` again. A member a hook stopped (``continue: false``, its record's ``stop``) is never
woken, and a call of it running here is ended (:meth:`TeamRuntime._halt`), in every process. Members stop when their team is deleted or marked done; :meth:`aclose` stops every
call, releases the leases and marks the members it holds ``stopped`` (the others may run elsewhere).

Push wake-ups: when the store has signals (:func:`~agentscope_teams.store.base.signals_of`;
memory, Redis and PostgreSQL), a listener task waits on the signal channels of every team served
(:meth:`~agentscope_teams.keys.TeamKeys.signal`, signalled by the client after board and mailbox
writes) and nudges the supervisor, so a member's claim begins right after the write instead of at
the next poll. The poll stays as the fallback: a missed signal (nobody listening yet, a subscriber
reconnecting, a store without signals) only delays the work until the next poll, so with signals a
longer ``poll`` (e.g. 5-30 s) is fine; without them keep it short. ``listening`` is the set of
channels the listener currently waits on.

Discovery (workers, ``discover``): the runtime does not call ``discover`` (a directory scan) every
step. With signals it listens on ``discover_signal`` (the store-wide ``teams-signal`` channel,
signalled when a team's directory record is written) and scans when it is signalled, once right
after it starts listening, and every ``discover_every`` seconds as the slow fallback. Without
signals (MariaDB, SQLite, files), or while waiting for them fails, it scans on a backoff: every
``poll`` after a scan that found a new team, doubling while scans find nothing new, up to
``MAX_SCAN_POLLS`` polls (and at most ``discover_every``). The teams found are kept between scans;
one that is gone is dropped at once (its ``on_gone`` runs), as is one that ended (its ``on_ended``
runs; an ended team is out of the directory, so a scan finds it again only once it is active
again). ``discoveries`` counts the scans.

Marking a team done or deleted marks every member ``stopped`` in the same write, and then only
``stopped`` is accepted (:meth:`~..rules.models.Team.with_status`): whichever process held a lease, or none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from ... import tracing
from ...agent.lease import Lease
from ...context import RuntimeContext
from ...errors import BudgetExceededError, ConfigurationError, TeamError
from ...keys import TeamKeys
from ...store.base import BaseStore, Key, Signals, signals_of
from ..board import TaskBoard
from ..mailbox import Mailbox
from ..protocol import TeamClient
from ..registry import TeamRegistry
from ..rules import limits
from ..rules.models import Member, MemberStatus, Team, TeamStatus
from .idle import call_until_idle
from .slot import Slot, TeamRef, lease_key
from .step_reads import Known, read_team
from .usage import team_budgets, tell_lead
from .work import Work, find_work

log = logging.getLogger(__name__)

MAX_BACKOFF = 60.0
#: The longest a signal listener waits before it looks again at the set of teams served (it is
#: read again when a step or ``watch`` marked it changed, or while it is empty).
LISTEN_REFRESH = 1.0
#: Seconds between step starts in a burst of nudges: nudges that come faster are coalesced.
STEP_SPACING = 0.01
#: Steps that may start back to back before :data:`STEP_SPACING` applies (one more is earned
#: per ``STEP_SPACING``): a wake-up after an idle period steps at once, a burst is spaced.
STEP_BURST = 3
#: Without push signals, directory scans back off to at most this many polls apart.
MAX_SCAN_POLLS = 8


@dataclass
class _Serving:
    """A running :meth:`TeamRuntime.serve_forever`: the scope that stops it, set when it ended."""

    scope: anyio.CancelScope
    ended: anyio.Event


class _Pace:
    """When the supervisor's next step may start: at once while steps are sparse (up to
    :data:`STEP_BURST` back to back), then at most one per :data:`STEP_SPACING`: a token bucket
    that refills one step per ``STEP_SPACING`` up to ``STEP_BURST``."""

    def __init__(self) -> None:
        self.tokens, self.at = float(STEP_BURST), 0.0

    def wait(self, now: float) -> float:
        """Seconds to wait before a step due at ``now`` (its token is taken)."""
        self.tokens = min(float(STEP_BURST), self.tokens + (now - self.at) / STEP_SPACING)
        self.at = now
        self.tokens -= 1.0
        if self.tokens >= 0.0:
            return 0.0
        delay = -self.tokens * STEP_SPACING
        self.tokens, self.at = 0.0, now + delay
        return delay


class TeamRuntime:
    """Member loops of the teams this process serves; see the module docs.

    Closing (:meth:`aclose`, which ``async with lead:`` reaches through the lead's extensions)
    always finishes: it returns once the supervisor, its listeners and heartbeat, and every member
    call have ended, the leases this process held are released and its members marked stopped.
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        lease_ttl: float = 30.0,
        poll: float = 1.0,
        idle_release: float = 60.0,
        max_members: int | None = None,
        discover: Callable[[], Awaitable[list[TeamRef]]] | None = None,
        discover_signal: Key | None = None,
        discover_every: float = 30.0,
    ) -> None:
        if max_members is not None and max_members < 1:
            raise ConfigurationError(f"max_members must be >= 1, got {max_members}")
        self.store, self.discover, self.max_members = store, discover, max_members
        self.lease_ttl = limits.config_seconds(lease_ttl, "lease_ttl")
        self.poll = limits.config_seconds(poll, "poll")
        self.idle_release = limits.config_seconds(idle_release, "idle_release", allow_zero=True)
        self.discover_signal = discover_signal
        self.discover_every = limits.config_seconds(discover_every, "discover_every")
        self._discovered: dict[Key, TeamRef] = {}  # what the last scan found (minus gone teams)
        self._discover_due = True
        self._next_discover = 0.0
        self._scan_gap = self.poll  # the backoff without signals
        self._discover_pushed = False  # the discovery listener is waiting on the signal
        self.discoveries = 0  # directory scans done (tests count them)
        self.refs: dict[Key, TeamRef] = {}
        self.slots: dict[Key, Slot] = {}
        self._skip: set[Key] = set()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._serving: _Serving | None = None  # the running serve_forever, in any task
        self._lock = asyncio.Lock()  # a step and stop_team never interleave
        self._served: dict[Key, TeamRef] = {}  # every team the last step looked at
        self._known: dict[Key, Known] = {}  # per team: what its previous step read
        self._boards: dict[Key, tuple[TaskBoard, Mailbox]] = {}  # per team, built once
        self._channels_changed = asyncio.Event()
        self.listening: frozenset[Key] = frozenset()
        self.steps = 0  # supervisor steps done (tests wait for the first)

    def watch(self, ref: TeamRef) -> None:
        """Serve ``ref``'s members from now on (starts the supervisor if needed)."""
        self.refs.setdefault(ref.key, ref)
        self._channels_changed.set()
        self.start()
        self.nudge()

    def watching(self, ctx: RuntimeContext, team_id: str) -> bool:
        return (*ctx.owner_scope(), team_id) in self.refs

    def nudge(self) -> None:
        """Look for work now instead of at the next poll."""
        self._wake.set()

    def start(self) -> None:
        if self._task is None or self._task.done():
            loop = asyncio.get_running_loop()
            self._task = loop.create_task(
                self.serve_forever(), name="team runtime", context=tracing.fresh_context()
            )

    async def stop_team(self, ctx: RuntimeContext, team_id: str) -> None:
        """Stop serving a team: cancel its calls and release its members' leases."""
        async with self._lock:
            ref = self.refs.pop((*ctx.owner_scope(), team_id), None)
            if ref is not None:
                await self._drop(ref, None)

    async def aclose(self) -> None:
        """Stop serving: end the supervisor (whichever task runs :meth:`serve_forever`), stop every
        member call, release the leases and mark the members stopped; return once all of it ended.

        The supervisor is stopped by cancelling its :class:`anyio.CancelScope`, not by one
        ``Task.cancel()``: a scope's cancellation is delivered again at every ``await`` until the
        supervisor has left it, so a library that swallows one cancellation (``asyncio.wait_for``
        on Python 3.11 does when its operation finishes as the cancel arrives; redis-py sends every
        command through it) cannot keep the loop running and this call waiting forever.
        """
        task, serving = self._task, self._serving
        if serving is not None:
            serving.scope.cancel()
            await serving.ended.wait()
        else:
            if task is not None and not task.done():
                task.cancel()  # not started yet: no library code ran that could swallow it
                await asyncio.wait({task})
            await self._shutdown()
        if task is not None and task.done() and not task.cancelled() and task.exception():
            log.warning("the team runtime had stopped with an error: %s", task.exception())

    async def serve_forever(self) -> None:
        """Supervise and heartbeat until cancelled or :meth:`aclose`-d; then stop every member
        (see :meth:`aclose`). Ended by ``aclose``, it returns normally."""
        serving = self._serving = _Serving(anyio.CancelScope(), anyio.Event())
        try:
            with serving.scope:
                await self._supervise()
        finally:
            try:
                with anyio.CancelScope(shield=True):
                    await self._shutdown()
            finally:
                if self._serving is serving:
                    self._serving = None
                serving.ended.set()

    async def _supervise(self) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._heartbeat)
            signals = signals_of(self.store)
            if signals is not None:
                tg.start_soon(self._listen, signals)
                if self.discover is not None and self.discover_signal is not None:
                    tg.start_soon(self._listen_discover, signals, self.discover_signal)
            pace = _Pace()
            while True:
                self._wake.clear()  # nudges during the step wake the next one at once
                await self.step()
                with anyio.move_on_after(self.poll):
                    await self._wake.wait()
                delay = pace.wait(anyio.current_time())
                if delay > 0.0:  # none after a quiet spell: the step starts in this turn
                    await anyio.sleep(delay)

    def _channels(self) -> frozenset[Key]:
        refs = {**self._served, **self.refs}
        return frozenset(TeamKeys(r.ctx.owner_scope(), r.team_id).signal() for r in refs.values())

    async def _listen(self, signals: Signals) -> None:
        """Nudge the supervisor whenever a served team's channel is signalled (see the module
        docs). A failing store is logged and retried after ``poll``: the poll covers the gap."""
        channels: frozenset[Key] | None = None
        while True:
            if not channels or self._channels_changed.is_set():  # else the same set as before
                self._channels_changed.clear()
                channels = self._channels()
                names = sorted(channels)
            self.listening = channels
            if not channels:
                with anyio.move_on_after(LISTEN_REFRESH):
                    await self._channels_changed.wait()
                continue
            try:
                async with anyio.create_task_group() as tg:

                    async def changed(scope: anyio.CancelScope = tg.cancel_scope) -> None:
                        await self._channels_changed.wait()
                        scope.cancel()

                    tg.start_soon(changed)
                    if await signals.wait_signal(names, LISTEN_REFRESH):
                        self.nudge()  # before the group's exit waits for ``changed`` to end
                    tg.cancel_scope.cancel()
            except Exception as exc:
                self.listening = frozenset()
                log.warning("waiting for team signals failed, polling instead: %s", exc)
                await anyio.sleep(self.poll)

    async def _listen_discover(self, signals: Signals, channel: Key) -> None:
        """Scan the directory when ``channel`` is signalled (see the module docs)."""
        first = True
        while True:
            try:
                woke = await signals.wait_signal([channel], 0.05 if first else self.discover_every)
            except Exception as exc:
                self._discover_pushed = False
                log.warning(
                    "waiting for the team directory signal failed, scanning instead: %s", exc
                )
                await anyio.sleep(self.poll)
                continue
            if woke or first:  # first: a team written before the listener listened is found now
                self._discover_due = True
                self.nudge()
            first, self._discover_pushed = False, True

    async def _discover_now(self) -> bool:
        """Scan the directory if a scan is due; False if it failed (logged; retried next step)."""
        assert self.discover is not None
        if not self._discover_due and time.monotonic() < self._next_discover:
            return True
        self._discover_due = False
        try:
            found = {r.key: r for r in await self.discover()}
        except Exception as exc:
            self._discover_due = True
            log.warning("team discovery failed: %s", exc)
            return False
        self.discoveries += 1
        fresh = found.keys() - self._discovered.keys()
        self._discovered = found
        if self._discover_pushed:
            gap = self.discover_every
        else:
            cap = min(self.discover_every, self.poll * MAX_SCAN_POLLS)
            gap = self._scan_gap = self.poll if fresh else min(self._scan_gap * 2, cap)
        self._next_discover = time.monotonic() + gap
        return True

    def _note_served(self, refs: list[TeamRef]) -> None:
        served = {r.key: r for r in refs}
        if served.keys() != self._served.keys():
            self._served = served
            self._channels_changed.set()

    async def step(self) -> None:
        """One look at every served team."""
        async with self._lock:
            await self._step()
            self.steps += 1

    async def _step(self) -> None:
        refs, complete = list(self.refs.values()), True
        if self.discover is not None:
            complete = await self._discover_now()
            refs += [r for r in self._discovered.values() if r.key not in self.refs]
        for ref in refs:
            try:
                await self._serve(ref)
            except Exception as exc:
                log.warning("could not serve team %s: %s", ref.team_id, exc)
        self._note_served(refs)
        served = {r.key for r in refs}
        for key, slot in list(self.slots.items()):  # teams no longer served (stopped, vanished)
            if complete and slot.ref.key not in served:
                self.slots.pop(key, None)
                await self._stop(slot)

    async def _serve(self, ref: TeamRef) -> None:
        client = ref.builder.client_factory(self.store, ref.ctx)
        keys = TeamKeys(ref.ctx.owner_scope(), ref.team_id)
        # The record, the open index (not the board) and the inboxes of the members the previous
        # step saw, read at once and straight from the store (the client would read the record
        # again for each): the step waits for the slowest read, not for their sum (.step_reads).
        board, inbox = self._team_io(ref.key, keys)
        got = await read_team(
            client,
            ref.team_id,
            board,
            inbox,
            self._known.setdefault(ref.key, Known()),
            lambda name: self._may_wake((*ref.key, name)),
        )
        team, version, tasks, unread = got.team, got.version, got.tasks, got.unread
        if team is None:
            self.refs.pop(ref.key, None)
            self._discovered.pop(ref.key, None)
            await self._drop(ref, None)
            if ref.on_gone is not None:
                await ref.on_gone()
            return
        if team.status is not TeamStatus.ACTIVE:  # ended: not read again unless found again
            self.refs.pop(ref.key, None)
            self._discovered.pop(ref.key, None)
            await self._drop(ref, client)
            if ref.on_ended is not None:
                await ref.on_ended()
            return
        for gone in [m for m in team.members if not m.takes_work]:
            await self._halt(ref, gone.name)
        members = [m for m in team.members if m.name in unread and m.takes_work]
        for member in members:
            key = (*ref.key, member.name)
            slot = self.slots.get(key)
            offered = slot.offered if slot else set()
            work = await find_work(client, team, member.name, tasks, offered, unread[member.name])
            if work is None:
                if slot is not None:
                    await self._maybe_release(slot)
                await self._reconcile(client, ref, member, slot)
                continue
            slot = slot or self._new_slot(ref, member, key)
            if slot is not None and await self._take(slot):
                self._launch(slot, client, team, member, work, version)

    async def _halt(self, ref: TeamRef, name: str) -> None:
        """A member a hook stopped (:attr:`~..rules.models.Member.takes_work`): its call here
        ends and its lease is given back; it is not woken again while its record says so."""
        slot = self.slots.pop((*ref.key, name), None)
        if slot is not None:
            log.info("member %s of team %s was stopped by a hook", name, ref.team_id)
            await self._stop(slot)

    def _team_io(self, key: Key, keys: TeamKeys) -> tuple[TaskBoard, Mailbox]:
        """The team's board and mailbox, built once (each keeps the names of its keys)."""
        got = self._boards.get(key)
        if got is None:
            got = self._boards[key] = (TaskBoard(self.store, keys), Mailbox(self.store, keys))
        return got

    def _may_wake(self, key: Key) -> bool:
        """Whether a step looks for the member's work: not skipped, not in a call."""
        slot = self.slots.get(key)
        return key not in self._skip and not (slot is not None and slot.busy)

    async def _reconcile(
        self, client: TeamClient, ref: TeamRef, member: Member, slot: Slot | None
    ) -> None:
        """A member shown running that no process holds (its process died): show it idle."""
        if member.status is not MemberStatus.RUNNING or (slot is not None and slot.lease):
            return
        if await self.store.get(lease_key(ref, member.name)) is None:
            await client.set_member_status(ref.team_id, member.name, MemberStatus.IDLE)

    def _new_slot(self, ref: TeamRef, member: Member, key: Key) -> Slot | None:
        problem = ref.builder.problem(member)
        if problem is not None:
            log.warning("not running member %s of team %s: %s", member.name, ref.team_id, problem)
            self._skip.add(key)
            return None
        slot = self.slots[key] = Slot(ref, member.name)
        return slot

    async def _take(self, slot: Slot) -> bool:
        """Hold the member's lease (acquiring it if capacity allows); False if not now."""
        if time.monotonic() < slot.retry_at:
            return False
        if slot.lease is not None and not slot.lease.lost:
            return True
        held = sum(1 for s in self.slots.values() if s.lease is not None)
        if self.max_members is not None and held >= self.max_members:
            return False
        lease = Lease(self.store, lease_key(slot.ref, slot.name), self.lease_ttl)
        if not await lease.try_acquire():
            return False
        slot.lease = lease
        return True

    async def _maybe_release(self, slot: Slot) -> None:
        if slot.lease is not None and time.monotonic() - slot.idle_since > self.idle_release:
            await self._release(slot)

    async def _release(self, slot: Slot) -> None:
        lease, slot.lease = slot.lease, None
        if lease is not None:
            try:
                await lease.release()
            except Exception as exc:  # it expires on its own
                log.warning("could not release the lease of member %s: %s", slot.name, exc)

    def _launch(
        self,
        slot: Slot,
        client: TeamClient,
        team: Team,
        member: Member,
        work: Work,
        version: int | None = None,
    ) -> None:
        slot.offered |= work.offers
        slot.scope = anyio.CancelScope()
        task = asyncio.get_running_loop().create_task(
            self._call(slot, slot.scope, client, team, member, work, version),
            name=f"team member {member.name}",
            context=tracing.fresh_context(),
        )
        slot.call = task  # the strong reference: the slot lives until the call was awaited

    async def _call(
        self,
        slot: Slot,
        scope: anyio.CancelScope,
        client: TeamClient,
        team: Team,
        member: Member,
        work: Work,
        version: int | None = None,
    ) -> None:
        """The member's call, its status written ``running`` beside it (the model need not wait
        for that write) and ``idle`` after both ended, by the client the member's tools use: it
        is handed the record the step read (``version``), so that write reads nothing first, and
        keeps the record it wrote, so the member's first claim's team guard is current."""
        if slot.agent is None or slot.ext is None:
            try:
                slot.agent, slot.ext = slot.ref.builder.build(slot.ref.ctx, team, member)
            except Exception as exc:
                slot.idle_since = time.monotonic()
                self._failed(slot, work, member, team, exc)
                self.nudge()
                return
        writer = slot.ext.view.client
        if version is not None and isinstance(writer, TeamRegistry):
            writer.remember_team(team.id, team, version)
        try:
            with scope:
                async with anyio.create_task_group() as tg:
                    slot.ext.status_written = written = anyio.Event()
                    tg.start_soon(_status_write, writer, team, member, written, scope)
                    await self._call_in_scope(slot, client, team, member, work)
        finally:  # the "running" write has ended: "idle" goes after it
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await writer.set_member_status(team.id, member.name, MemberStatus.IDLE)
            self.nudge()

    async def _call_in_scope(
        self, slot: Slot, client: TeamClient, team: Team, member: Member, work: Work
    ) -> None:
        assert slot.ext is not None
        try:
            slot.ext.team, slot.ext.unread = team, work.unread  # its first step reads no more
            with (
                tracing.joined(work.trace, work.linked),
                team_budgets(team, member, self.store, slot.ref.budgets),
            ):
                ctx = slot.ref.ctx.with_session(member.session_id)  # then TeammateIdle, see .idle
                await call_until_idle(slot, client, team, member, work, ctx)
            slot.failures = 0
        except BudgetExceededError as exc:  # no retry will pass: the lead reads why
            slot.retry_at = time.monotonic() + MAX_BACKOFF
            log.warning("member %s of team %s stopped: %s", member.name, team.id, exc)
            with contextlib.suppress(Exception):
                await tell_lead(client, team, member, exc)
        except Exception as exc:
            self._failed(slot, work, member, team, exc)
        finally:
            slot.idle_since = time.monotonic()
            slot.ext.unread = None  # not left for a later call if this one failed first

    def _failed(self, slot: Slot, work: Work, member: Member, team: Team, exc: Exception) -> None:
        """A call that failed: retried after a backoff, its work offered again then."""
        slot.failures += 1
        slot.retry_at = time.monotonic() + min(2.0**slot.failures, MAX_BACKOFF)
        slot.offered -= work.offers
        log.warning("member %s of team %s failed: %s", member.name, team.id, exc)

    async def _heartbeat(self) -> None:
        while True:
            await anyio.sleep(self.lease_ttl / 3)
            for slot in list(self.slots.values()):
                try:
                    await slot.beat()
                except Exception as exc:  # a store hiccup: the lease outlives a missed beat
                    log.warning("heartbeat of member %s failed: %s", slot.name, exc)

    async def _drop(self, ref: TeamRef, client: TeamClient | None) -> None:
        """Stop the members of ``ref``; with ``client``, mark them stopped."""
        self._known.pop(ref.key, None)
        self._boards.pop(ref.key, None)
        for key, slot in list(self.slots.items()):
            if slot.ref.key != ref.key:
                continue
            self.slots.pop(key, None)
            await self._stop(slot)
            if client is not None:
                with contextlib.suppress(Exception):
                    await client.set_member_status(ref.team_id, slot.name, MemberStatus.STOPPED)

    async def _stop(self, slot: Slot) -> None:
        if slot.call is not None and not slot.call.done():
            slot.cancel_call()
            await asyncio.wait({slot.call})  # its outcome was logged by _call
        await self._release(slot)

    async def _shutdown(self) -> None:
        for slot in list(self.slots.values()):
            held = slot.lease is not None
            await self._stop(slot)
            if held:
                client = slot.ref.builder.client_factory(self.store, slot.ref.ctx)
                with contextlib.suppress(Exception):
                    await client.set_member_status(
                        slot.ref.team_id, slot.name, MemberStatus.STOPPED
                    )
        self.slots.clear()


async def _status_write(
    client: TeamClient,
    team: Team,
    member: Member,
    written: anyio.Event,
    call: anyio.CancelScope,
) -> None:
    """Mark ``member`` running, shielded (a cancelled call still orders its later writes after
    this one), then set ``written`` (the member's tools wait for it before their first team call,
    so its first claim's team guard is the record written; the model's request does not wait).
    A write the team refuses (it ended, or the member left it since the step read it) cancels
    the ``call``: a stopped member sends no request, and one already sent is not waited for. Any
    other failure is logged and the call goes on."""
    status = MemberStatus.RUNNING
    with anyio.CancelScope(shield=True):
        try:
            await client.set_member_status(team.id, member.name, status)
        except TeamError as exc:
            log.info("member %s of team %s does not run: %s", member.name, team.id, exc)
            call.cancel()
        except Exception as exc:
            log.warning(
                "could not mark member %s of team %s %s: %s", member.name, team.id, status, exc
            )
        finally:
            written.set()
