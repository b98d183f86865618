"""Run records: one per subagent run, in the store, registered per (org, user, parent session).

Their keys (the record, the executing lease, the parent's notice inbox and each run's ``agent_send``
mail, with ``-ack`` cursors beside the two streams) are :class:`~agentscope_teams.keys.RunKeys`.

Every write is a compare-and-set (:meth:`RunBook.update`). The process executing a run holds its lease
(a key with a store TTL, renewed by heartbeat). A reader that finds an active (pending / running) record
whose lease is gone marks it ``lost`` with a CAS (:meth:`RunBook.reconcile`), so a run orphaned by a
crashed process never stays "running". Terminal statuses are final: the first CAS to one wins.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field

from .. import tracing
from ..agent.lease import Lease
from ..context import RuntimeContext
from ..errors import VersionConflict
from ..keys import RunKeys
from ..listing import UNREADABLE, Listing, Unreadable, unreadable
from ..message import utcnow
from ..records import StoredRecord
from ..state import check_schema_version
from ..store.base import BaseStore, Key
from .inbox import Inbox, Notice

RUN_SCHEMA_VERSION = 1


class RunStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    LOST = "lost"

    @property
    def active(self) -> bool:
        return self in (RunStatus.PENDING, RunStatus.RUNNING)


class RunRecord(StoredRecord):
    """What is known about one run; ``background`` runs report their outcome to the parent's inbox.
    A field of a newer release is kept (:class:`~agentscope_teams.records.StoredRecord`)."""

    schema_version: int = RUN_SCHEMA_VERSION
    run_id: str
    parent_agent: str
    spec: str
    task: str
    label: str | None = None
    status: RunStatus = RunStatus.PENDING
    result: str | None = None
    #: The validated structured output (JSON) of a spec with ``output:``; None otherwise.
    output: Any = None
    error: str | None = None
    child_session: str
    depth: int
    created_at: datetime = Field(default_factory=utcnow)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    #: Holder token of the executing process's lease.
    lease: str
    background: bool = False
    notified: bool = False
    cancel_requested: bool = False
    #: The isolated directory of the run (None: shared workspace).
    workspace: str | None = None
    #: Highest sequence number of a message queued with ``agent_send`` while it ran.
    mail_seq: int = 0
    #: The run whose child session this one continues (``agent_send`` to a finished run).
    continues: str | None = None
    #: W3C trace context of the span that spawned it: the child's spans join that trace.
    trace_context: dict[str, str] | None = None
    #: Whether its SubagentStop was emitted (claimed with a CAS: one process emits it, once).
    stop_emitted: bool = False
    #: Set when a SubagentStop hook's ``continue: false`` ended the run: the hook's
    #: ``stopReason`` ("" when it gave none), told to the parent beside the result.
    hook_stop: str | None = None

    def stop_note(self) -> str:
        """What the parent is told beside the answer when a hook stopped the run ("" if none)."""
        if self.hook_stop is None:
            return ""
        why = f": {self.hook_stop}" if self.hook_stop else " (it gave no reason)"
        return f"[stopped by a SubagentStop hook{why}]"

    def finished(
        self, status: RunStatus, *, result: str | None = None, error: str | None = None
    ) -> RunRecord:
        """A copy in terminal ``status``."""
        return self.model_copy(
            update={"status": status, "result": result, "error": error, "ended_at": utcnow()}
        )


def new_run_id() -> str:
    return "r-" + secrets.token_hex(5)


def child_session_id(ctx: RuntimeContext, parent_agent: str, spec: str, slot: str) -> str:
    """Deterministic child session id from (org, user, parent agent, parent session, spec, slot)."""
    parts = [ctx.org_id, ctx.user_id, parent_agent, ctx.session_id, spec, slot]
    digest = hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]
    return f"sub-{spec}-{digest}"


def notice_for(rec: RunRecord) -> Notice:
    """The parent-inbox notification of a finished run (its id is stable: appends are idempotent)."""
    who = f"{rec.spec}" + (f", label {rec.label}" if rec.label else "")
    if rec.status is RunStatus.COMPLETED:
        text = f"Subagent run {rec.run_id} ({who}) completed. Its answer:\n{rec.result or ''}"
        if note := rec.stop_note():
            text = f"{text}\n\n{note}"
    elif rec.status is RunStatus.LOST:
        text = (
            f"Subagent run {rec.run_id} ({who}) was lost: {rec.error}. "
            "Spawn it again if you still need its result."
        )
    else:
        text = f"Subagent run {rec.run_id} ({who}) {rec.status}: {rec.error}"
    return Notice(id=f"{rec.run_id}:{rec.status}", run_id=rec.run_id, text=text)


class RunBook:
    """The runs of one (org, user, parent session); every read and write stays inside it."""

    def __init__(self, store: BaseStore, org: str, user: str, session: str) -> None:
        self.store = store
        self.scope = (org, user, session)
        self.keys = RunKeys(self.scope)

    @classmethod
    def for_ctx(cls, store: BaseStore, ctx: RuntimeContext) -> RunBook:
        return cls(store, *ctx.scope())

    def key(self, run_id: str) -> Key:
        return self.keys.run(run_id)

    def lease(self, run_id: str, ttl: float) -> Lease:
        """The executing process's claim on a run (the agent layer's store lease)."""
        return Lease(self.store, self.keys.lease(run_id), ttl)

    def inbox(self, parent_agent: str) -> Inbox:
        """The notification inbox of the parent agent's session."""
        return Inbox(self.store, *self.keys.inbox(parent_agent))

    def mail(self, run_id: str) -> Inbox:
        """Messages queued for a running child (``agent_send``)."""
        return Inbox(self.store, *self.keys.mail(run_id))

    async def create(self, rec: RunRecord) -> None:
        await self.store.put(self.key(rec.run_id), _dump(rec), expected_version=0)

    async def _read(self, run_id: str) -> tuple[RunRecord, int] | None:
        entry = await self.store.get(self.key(run_id))
        if entry is None:
            return None
        data = check_schema_version(json.loads(entry.value), RUN_SCHEMA_VERSION, "run record")
        return RunRecord.model_validate(data), entry.version

    async def get(self, run_id: str) -> RunRecord | None:
        loaded = await self._read(run_id)
        return loaded[0] if loaded else None

    async def update(
        self, run_id: str, change: Callable[[RunRecord], RunRecord | None]
    ) -> RunRecord | None:
        """Apply ``change`` with a CAS, retrying on conflict; ``change`` returns None to keep it."""
        while True:
            loaded = await self._read(run_id)
            if loaded is None:
                return None
            new = change(loaded[0])
            if new is None:
                return loaded[0]
            try:
                await self.store.put(self.key(run_id), _dump(new), expected_version=loaded[1])
            except VersionConflict as exc:
                tracing.conflict(exc.key)
                continue
            return new

    async def claim_stop(self, run_id: str, *, final: bool = True) -> RunRecord | None:
        """Mark the run's SubagentStop emitted; the record if this caller marked it, None if it
        was already (or the run is gone, or with ``final`` still active). A compare-and-set: of
        two processes claiming at once, one gets the record."""
        while True:
            loaded = await self._read(run_id)
            if loaded is None or loaded[0].stop_emitted or (final and loaded[0].status.active):
                return None
            new = loaded[0].model_copy(update={"stop_emitted": True})
            try:
                await self.store.put(self.key(run_id), _dump(new), expected_version=loaded[1])
            except VersionConflict as exc:
                tracing.conflict(exc.key)
                continue
            return new

    async def unclaim_stop(self, run_id: str) -> None:
        """Undo :meth:`claim_stop` (a SubagentStop hook blocked: the run goes on)."""
        await self.update(
            run_id,
            lambda r: r.model_copy(update={"stop_emitted": False}) if r.stop_emitted else None,
        )

    async def list(self, *, limit: int = 10_000) -> Listing[RunRecord]:
        """Every run of the scope, oldest first (reconciled: see :meth:`reconcile`).

        A record that cannot be decoded is left out, logged and named in the result's
        ``problems`` (:class:`~agentscope_teams.sessions.Unreadable`); the rest are listed.
        """
        keys: list[Key] = []
        after: Key | None = None
        while len(keys) < limit:
            page = await self.store.list_keys(self.keys.prefix(), limit=500, after=after)
            keys += page
            if len(page) < 500:
                break
            after = page[-1]
        runs: list[RunRecord] = []
        problems: list[Unreadable] = []
        for key in keys:
            run_id = RunKeys.parse(key)[1]
            try:
                rec = await self.load(run_id)
            except UNREADABLE as exc:
                problems.append(unreadable("run", run_id, key, exc))
                continue
            if rec is not None:
                runs.append(rec)
        return Listing(sorted(runs, key=lambda r: r.created_at), problems)

    async def load(self, run_id: str) -> RunRecord | None:
        """The record, reconciled: an orphaned active run becomes ``lost``; overdue notices go out."""
        rec = await self.get(run_id)
        return None if rec is None else await self.reconcile(rec)

    async def reconcile(self, rec: RunRecord) -> RunRecord:
        if rec.status.active and await self.store.get(self.keys.lease(rec.run_id)) is None:
            error = "the process running it stopped before it finished (its lease expired)"

            def lose(r: RunRecord) -> RunRecord | None:
                if not r.status.active:
                    return None
                return r.finished(RunStatus.LOST, error=error).model_copy(
                    update={"background": True}
                )

            rec = await self.update(rec.run_id, lose) or rec
        if not rec.status.active and rec.background and not rec.notified:
            rec = await self.notify(rec)
        return rec

    async def notify(self, rec: RunRecord) -> RunRecord:
        """Append the run's notification to the parent's inbox, then mark the record notified.

        A crash in between appends it again later under the same id; injection skips duplicates.
        """
        if rec.status is not RunStatus.CANCELLED:
            await self.inbox(rec.parent_agent).post(notice_for(rec))
        done = await self.update(
            rec.run_id, lambda r: None if r.notified else r.model_copy(update={"notified": True})
        )
        return done or rec


def _dump(rec: RunRecord) -> bytes:
    return rec.model_dump_json().encode()
