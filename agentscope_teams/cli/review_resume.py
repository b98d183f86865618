"""``agentscope-teams review --resume``: continue an interrupted review from the store.

Everything a review needs to go on is in the store: the lead's session (its conversation, with the
team it created), the team's board and mailboxes, and the members' sessions. A review records how
it was started (:class:`ReviewRecord`: the directory, the report's path, the model, the specs, the
budget and rate limit) in its lead session's config, under ``metadata["review"]``, when it starts;
a resume that gives some of them again records those (:func:`update_review`).

``--resume`` takes the most recently updated review whose team is not done (or ``--resume
SESSION`` for one by its lead session id) and calls the lead again on that session: calls cut short
by the kill are closed as "did not complete", the lead picks up where its conversation stops, its
extension starts the member loops again, and the members reclaim the tasks they held; tasks
already completed stay completed and their files are not analysed again (the analysis cache).
When the lead had already answered (the process died while writing the report), its answer is the
report.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from ..context import RuntimeContext
from ..errors import UnknownTeamError
from ..keys import SessionAddress
from ..records import FROM_STORE, StoredRecord
from ..sessions import SessionConfig, SessionRecord, SessionSource, SessionStorage
from ..state import AgentState
from ..store.base import BaseStore
from ..teams import LocalTeamClient, TeamStatus
from ..teams.lead.state import TeamLeadState
from ..usage import Budget, RateLimit
from .common import CommandError

#: The lead agent's name: its sessions are where a review is recorded and found again.
LEAD = "lead"
META_KEY = "review"
RESUME_INSTRUCTION = (
    "The process running this review stopped before the review was finished. Carry on from where "
    "it stopped and answer with the review report, as your instructions describe."
)


class ReviewRecord(StoredRecord):
    """How a review was started: what ``--resume`` needs to run it on (kept in the lead
    session's config; a newer release's field is kept)."""

    model_config = ConfigDict(frozen=True)

    path: str
    target: str
    output: str
    model: str
    specs: str
    #: ``--changed-since REF`` of the review (None: the whole directory); a resume uses it again.
    changed_since: str | None = None
    #: ``--max-tokens`` / ``--max-budget-usd`` and ``--rate-limit`` (None: none); a resume keeps
    #: them unless given again.
    budget: Budget | None = None
    rate_limit: RateLimit | None = None


async def record_review(store: BaseStore, session_id: str, record: ReviewRecord) -> None:
    """Create the lead's session with ``record`` in its config, before the lead's first call."""
    config = SessionConfig(
        workspace=record.path, metadata={META_KEY: record.model_dump(mode="json")}
    )
    addr = SessionAddress(None, None, LEAD, session_id)
    state = AgentState(session_id=session_id)
    await SessionStorage(store).create_at(
        addr, config=config, state=state, source=SessionSource.USER
    )


async def update_review(store: BaseStore, session_id: str, record: ReviewRecord) -> None:
    """Replace the record of the review whose lead session is ``session_id`` (a resume that gave
    options again), before the lead's call: the rest of the session stays as it is."""
    addr = SessionAddress(None, None, LEAD, session_id)
    storage = SessionStorage(store)
    found = await storage.get_at(addr)
    if found is None:
        raise CommandError(f"the lead session {session_id!r} of the review is gone from the store")
    metadata = {**found.config.metadata, META_KEY: record.model_dump(mode="json")}
    config = found.config.model_copy(update={"metadata": metadata})
    await storage.upsert_at(addr, config=config, expected_version=found.version)


def _record_of(session: SessionRecord) -> ReviewRecord | None:
    data = session.config.metadata.get(META_KEY)
    try:
        if data is None:
            return None
        return ReviewRecord.model_validate(data, context=FROM_STORE)
    except ValidationError:
        return None


class Interrupted(BaseModel):
    """A review to resume: its lead session, how it started, and the lead's answer if it gave one."""

    session_id: str
    record: ReviewRecord
    updated_at: datetime
    team_id: str | None = None
    answer: str | None = None


def final_answer(session: SessionRecord) -> str | None:
    """The lead's last message when it is a final answer (text, no tool calls), else None."""
    messages = session.state.context
    last = messages[-1] if messages else None
    if last is None or last.role != "assistant" or last.tool_uses():
        return None
    return last.get_text_content()


async def _finished(store: BaseStore, session: SessionRecord) -> bool:
    team_id = TeamLeadState.peek(session.state).team_id
    if team_id is None:
        return final_answer(session) is not None
    client = LocalTeamClient(store, RuntimeContext(session_id=session.session_id))
    try:
        team = await client.get_team(team_id)
    except UnknownTeamError:
        return True
    return team.status in (TeamStatus.COMPLETED, TeamStatus.DONE)  # DONE: older reviews


async def find_interrupted(store: BaseStore, session_id: str | None) -> Interrupted:
    """The review to resume (``session_id``, else the most recently updated unfinished one)."""
    listing = await SessionStorage(store).list_sessions(None, LEAD)
    reviews = [(s, r) for s in listing if (r := _record_of(s)) is not None]
    if session_id is not None:
        reviews = [(s, r) for s, r in reviews if s.session_id == session_id]
        if not reviews:
            raise CommandError(
                f"no review with lead session {session_id!r} in this store; "
                "`agentscope-teams sessions list --agent lead` lists them"
            )
    pending = [(s, r) for s, r in reviews if not await _finished(store, s)]
    if not pending:
        what = f"review {session_id!r} is finished" if session_id else "no unfinished review"
        raise CommandError(
            f"{what} in this store; start one with `agentscope-teams review PATH` "
            "(and pass the same --store to --resume)"
        )
    session, record = max(pending, key=lambda sr: sr[0].updated_at)
    return Interrupted(
        session_id=session.session_id,
        record=record,
        updated_at=session.updated_at,
        team_id=TeamLeadState.peek(session.state).team_id,
        answer=final_answer(session),
    )


def check_resumable(record: ReviewRecord) -> None:
    """The reviewed directory must still be there."""
    if not Path(record.path).is_dir():
        raise CommandError(
            f"the review of {record.target} cannot resume: {record.path} is no longer a directory"
        )
