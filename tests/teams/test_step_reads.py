"""The runtime step's reads of a team in one round (:mod:`agentscope_teams.teams.member.step_reads`):
what it guesses from the previous step (the members, their cursors) only decides what is read at
once, never what the step sees."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.mailbox import Mailbox
from agentscope_teams.teams.member.step_reads import Known, StepReads, read_team
from agentscope_teams.teams.rules.models import Team

from ..backends import StoreSpec, make_spec
from ..conftest import require_service

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memory", "redis", "postgres"])
def spec(request: pytest.FixtureRequest, tmp_path: Path) -> StoreSpec:
    """A store whose step reads the inbox pages beside the record (Redis: one pipeline) or on
    their own (the others)."""
    require_service(request.param)
    return make_spec(request.param, tmp_path)


async def _step(lead: LocalTeamClient, team_id: str, known: Known) -> StepReads:
    keys = TeamKeys(lead.ctx.owner_scope(), team_id)
    board, inbox = TaskBoard(lead.store, keys), Mailbox(lead.store, keys)
    return await read_team(lead, team_id, board, inbox, known, lambda name: name != "busy")


def _contents(got: StepReads, member: str) -> list[str]:
    return [m.content for m in got.unread[member]]


async def test_a_step_sees_what_a_sequential_read_sees_when_its_guesses_are_stale(
    spec: StoreSpec,
) -> None:
    """A cursor moved since the previous step (the member acknowledged), a member spawned since,
    a busy member: the unread pages are those after each cursor as stored now (on Redis the
    pages read in the record's pipeline, as :meth:`Mailbox.read` reads them)."""
    async with spec.open() as store:
        await _stale_guesses(store)


async def _stale_guesses(store: Any) -> None:
    lead = LocalTeamClient(store, RuntimeContext(session_id="lead", user_id="step-reads"))
    team = await lead.create_team("reads")
    await lead.spawn_member(team.id, "a", "reviewer")
    await lead.spawn_member(team.id, "busy", "reviewer")
    mailbox = Mailbox(store, TeamKeys(lead.ctx.owner_scope(), team.id))
    known = Known()
    first = await _step(lead, team.id, known)  # learns the members and their cursors (0)
    assert first.unread == {"a": []} and known.members == ["a", "busy"]
    one = await mailbox.deliver("lead", "a", "one")
    await mailbox.deliver("lead", "a", "two")
    await mailbox.acknowledge("a", one.seq)  # moved since the previous step saw 0
    await lead.spawn_member(team.id, "b", "reviewer")  # not in the previous step's record
    await mailbox.deliver("lead", "b", "hello b")
    await lead.assign_task(team.id, "review a.py", assignee="a")

    got = await _step(lead, team.id, known)

    assert got.team is not None and got.version is not None
    assert [t.title for t in got.tasks] == ["review a.py"]
    assert _contents(got, "a") == ["two"]  # not "one": read again after the cursor read now
    assert _contents(got, "b") == ["hello b"]
    assert "busy" not in got.unread
    assert known.members == ["a", "busy", "b"] and known.cursors == {"a": one.seq, "b": 0}
    again = await _step(lead, team.id, known)  # the guesses hold now: the same pages
    assert _contents(again, "a") == ["two"] and _contents(again, "b") == ["hello b"]
    await store.append(mailbox.keys.inbox("b"), b"not a message")  # named, a notice in its place
    last = await _step(lead, team.id, known)
    page = last.unread["b"]
    assert page == await mailbox.read("b", after=0, limit=100)
    assert [m.sender for m in page] == ["lead", ""] and len(page.problems) == 1  # type: ignore[attr-defined]


async def test_a_step_of_a_deleted_team_reads_no_team() -> None:
    store = InMemoryStore()
    lead = LocalTeamClient(store, RuntimeContext(session_id="lead", user_id="step-reads"))
    team = await lead.create_team("reads")
    await lead.spawn_member(team.id, "a", "reviewer")
    known = Known()
    await _step(lead, team.id, known)
    await lead.delete_team(team.id)
    got = await _step(lead, team.id, known)
    assert got.team is None


class _Remote:
    """A client that is not a registry of the runtime's store (a remote one): the step reads the
    record through it, the cursors from the store on their own."""

    def __init__(self, client: LocalTeamClient) -> None:
        self.client = client

    async def get_team(self, team_id: str) -> Team:
        return await self.client.get_team(team_id)


@pytest.mark.parametrize("remote", [False, True], ids=["registry", "remote"])
async def test_the_record_is_read_beside_the_cursors_only_from_a_client_of_the_store(
    remote: bool,
) -> None:
    """A client of the runtime's store: the record and every cursor in one read (one
    ``get_many``), its version known. Any other client: the record through
    it (no version), the cursors in a read of their own. The same pages either way."""
    store = InMemoryStore()
    lead = LocalTeamClient(store, RuntimeContext(session_id="lead", user_id="step-reads"))
    team = await lead.create_team("reads")
    await lead.spawn_member(team.id, "a", "reviewer")
    mailbox = Mailbox(store, TeamKeys(lead.ctx.owner_scope(), team.id))
    known = Known()
    await _step(lead, team.id, known)
    one = await mailbox.deliver("lead", "a", "one")
    await mailbox.deliver("lead", "a", "two")
    await mailbox.acknowledge("a", one.seq)
    keys = TeamKeys(lead.ctx.owner_scope(), team.id)
    ours = {keys.team(): "team", keys.cursor("a"): "cursor"}
    reads: list[list[str]] = []  # per read of the store: the record and cursors it read
    get, get_many = store.get, store.get_many

    async def counted_get(key: Any) -> Any:
        reads.append([ours.get(key, "other")])
        return await get(key)

    async def counted_get_many(keys: Any) -> Any:
        reads.append(sorted(ours.get(k, "other") for k in keys))
        return await get_many(keys)

    store.get, store.get_many = counted_get, counted_get_many  # type: ignore[method-assign]
    client: Any = _Remote(lead) if remote else lead
    got = await read_team(
        client, team.id, TaskBoard(store, keys), Mailbox(store, keys), known, lambda _: True
    )
    assert got.team is not None and _contents(got, "a") == ["two"]
    ours_read = sorted(r for r in reads if r and "other" not in r)
    assert ours_read == ([["cursor"], ["team"]] if remote else [["cursor", "team"]]), reads
    assert (got.version is None) is remote


async def test_a_round_within_the_bound_takes_no_limiter(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step reading one member's inbox (three reads at most) starts them without a capacity
    limiter, whose turns cost more than the reads' own starts (before issue 26's h-wake6: one
    per step); a round over :data:`ROUND_READS` still takes one."""
    from agentscope_teams.teams.member import step_reads

    made: list[float] = []
    limiter = step_reads.anyio.CapacityLimiter

    def counted(tokens: float) -> Any:
        made.append(tokens)
        return limiter(tokens)

    monkeypatch.setattr(step_reads.anyio, "CapacityLimiter", counted)
    store = InMemoryStore()
    lead = LocalTeamClient(store, RuntimeContext(session_id="lead", user_id="step-reads"))
    team = await lead.create_team("reads")
    await lead.spawn_member(team.id, "a", "reviewer")
    known = Known()
    await _step(lead, team.id, known)  # learns the member
    await _step(lead, team.id, known)
    assert made == []
    for name in ("b", "c", "d", "e"):
        await lead.spawn_member(team.id, name, "reviewer")
    await _step(lead, team.id, known)  # learns them: their pages are read late
    await _step(lead, team.id, known)  # five pages, the record, the board: seven reads
    assert made == [step_reads.ROUND_READS]
