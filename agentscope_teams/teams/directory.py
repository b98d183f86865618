"""The team directory: one global record per team telling member runtimes how to serve it.

Teams are scoped to (org, user), but a worker (``agentscope-teams worker``) serves teams of every
user of a store, so it needs a place to find them. ``createTeam`` writes a :class:`TeamRuntimeRecord`
at the team's directory key (layout: :mod:`agentscope_teams.keys`, family ``team-runtime``). Workers
page through every record (or those of one org, for ``--org``) and serve teams whose ``mode`` is
not ``"local"``. A record also keeps the budgets the lead's call drew on (``budgets``), so the
members a worker runs draw on them as those in the lead's process do. Deleting the team
(``deleteTeam``, :meth:`~.client.LocalTeamClient.delete_team`) removes the record; a worker also
removes records whose team is gone.
A team that ends (its lead's ``endTeam``, ``team archive``, the status API: every path goes
through :meth:`~.client.LocalTeamClient.set_team_status`) leaves the directory: its record moves
to the team's own prefix (:func:`park_record`), so no worker scans or serves it, and moves back
when an operator sets the team ``active`` again (:func:`unpark_record`), so workers serve it again.
Writing a record signals the store-wide ``teams-signal`` channel (:func:`~..keys.directory_signal`,
when the store has signals): workers scan the directory then, not every poll (see
:class:`~.member.runtime.TeamRuntime`).
The directory is infrastructure: a worker acts for every tenant it finds, so run workers as trusted
services (or restrict them with ``--org``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from ..context import RuntimeContext
from ..keys import TEAM_RUNTIME, TeamKeys, directory_key, directory_prefix, directory_signal
from ..listing import UNREADABLE, Unreadable, unreadable
from ..message import utcnow
from ..state import check_schema_version
from ..store.base import BaseStore, Key, signals_of
from ..usage import Budget

RECORD_SCHEMA_VERSION = 1
RunMembers = Literal["local", "workers", "any"]

log = logging.getLogger(__name__)


class TeamRuntimeRecord(BaseModel):
    """How a team's members run: where (``mode``), in which workspace, for whom."""

    schema_version: int = RECORD_SCHEMA_VERSION
    team_id: str
    org_id: str | None = None
    user_id: str | None = None
    lead: str
    #: The lead's session that created the team (None on records from before it was kept):
    #: deleting that session ends the team (:func:`~.lifecycle.end_session_teams`).
    lead_session: str | None = None
    description: str = ""
    mode: RunMembers = "local"
    workspace: str = ""
    root: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    #: The budgets in force for the lead (its session's, user's, org's: name -> limits), kept up
    #: to date by its calls: members in other processes draw on them too, so one ledger counts
    #: the lead's calls and the team's (members in the lead's process inherit them).
    budgets: dict[str, Budget] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _check_version(cls, data: Any) -> Any:
        return check_schema_version(data, RECORD_SCHEMA_VERSION, "TeamRuntimeRecord")

    def context(self, session_id: str = "team-runtime") -> RuntimeContext:
        """The owner's context (org, user) with a placeholder session."""
        return RuntimeContext(session_id=session_id, user_id=self.user_id, org_id=self.org_id)


async def put_record(store: BaseStore, ctx: RuntimeContext, record: TeamRuntimeRecord) -> None:
    """Write ``record`` and wake the workers (a failed signal is logged: their slow scan finds it)."""
    await store.put(directory_key(ctx, record.team_id), record.model_dump_json().encode())
    signals = signals_of(store)
    if signals is not None:
        try:
            await signals.signal(directory_signal())
        except Exception as exc:
            log.warning("could not signal the team directory, workers find the team later: %s", exc)


async def get_record(
    store: BaseStore, ctx: RuntimeContext, team_id: str
) -> TeamRuntimeRecord | None:
    entry = await store.get(directory_key(ctx, team_id))
    return None if entry is None else TeamRuntimeRecord.model_validate_json(entry.value)


async def delete_record(store: BaseStore, ctx: RuntimeContext, team_id: str) -> None:
    await store.delete(directory_key(ctx, team_id))


async def park_record(store: BaseStore, ctx: RuntimeContext, team_id: str) -> None:
    """Take the record of ``team_id`` (which ended) out of the directory, kept beside the team's
    records for :func:`unpark_record`. Safe to repeat (after a crash, or with no record: a team
    made without one, or parked already)."""
    keys = TeamKeys(ctx.owner_scope(), team_id)
    entry = await store.get(keys.directory())
    if entry is not None:
        await store.put(keys.parked_directory(), entry.value)
        await store.delete(keys.directory())


async def unpark_record(store: BaseStore, ctx: RuntimeContext, team_id: str) -> None:
    """Put the record :func:`park_record` kept back into the directory (workers are signalled:
    they serve the team again). Safe to repeat; nothing when none was kept."""
    keys = TeamKeys(ctx.owner_scope(), team_id)
    entry = await store.get(keys.parked_directory())
    if entry is not None:
        await put_record(store, ctx, TeamRuntimeRecord.model_validate_json(entry.value))
        await store.delete(keys.parked_directory())


async def records_of(store: BaseStore, ctx: RuntimeContext) -> list[TeamRuntimeRecord]:
    """The directory records of ``ctx``'s (org, user): its teams that have not ended."""
    prefix = TEAM_RUNTIME.prefix(*ctx.owner_scope())
    return [record async for record in _records_under(store, prefix)]


async def scan_records(
    store: BaseStore,
    org_id: str | None = None,
    *,
    any_org: bool = True,
    problems: list[Unreadable] | None = None,
) -> AsyncIterator[TeamRuntimeRecord]:
    """Every record of the store (``any_org``), or of ``org_id`` only (None = no org).

    A record that cannot be decoded is skipped and logged (and added to ``problems`` when given):
    the other teams are still served.
    """
    async for record in _records_under(store, directory_prefix(org_id, any_org=any_org), problems):
        yield record


async def _records_under(
    store: BaseStore, prefix: Key, problems: list[Unreadable] | None = None
) -> AsyncIterator[TeamRuntimeRecord]:
    """The records under ``prefix``; an undecodable one skipped and logged (in ``problems``)."""
    after: Key | None = None
    while page := await store.list_keys(prefix, limit=200, after=after):
        for key in page:
            entry = await store.get(key)
            if entry is None:
                continue
            try:
                record = TeamRuntimeRecord.model_validate_json(entry.value)
            except UNREADABLE as exc:
                team_id = (TEAM_RUNTIME.match(key) or {}).get("team", "?")
                problem = unreadable("team runtime record", team_id, key, exc)
                if problems is not None:
                    problems.append(problem)
                continue
            yield record
        after = page[-1]
