"""``RunBook.list`` with an undecodable run record: reported, and the other runs still listed."""

from __future__ import annotations

import json

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import SchemaVersionError
from agentscope_teams.sessions import Listing
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents import RunBook, RunRecord, RunStatus

pytestmark = pytest.mark.anyio
ALICE = RuntimeContext(session_id="s1", user_id="alice")


def record(run_id: str) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        parent_agent="lead",
        spec="rev",
        task="t",
        status=RunStatus.COMPLETED,
        child_session="sub-rev-x",
        depth=1,
        lease="holder",
        notified=True,
    )


async def test_an_unreadable_run_is_reported_and_the_others_listed() -> None:
    store = InMemoryStore()
    book = RunBook.for_ctx(store, ALICE)
    for run_id in ("r-1", "r-2", "r-3", "r-4"):
        await book.create(record(run_id))
    await store.put(book.key("r-2"), b"[1, 2")
    newer = json.loads(record("r-4").model_dump_json()) | {"schema_version": 5}
    await store.put(book.key("r-4"), json.dumps(newer).encode())

    runs = await book.list()
    assert isinstance(runs, Listing)
    assert [r.run_id for r in runs] == ["r-1", "r-3"]
    problems = {p.id: p for p in runs.problems}
    assert set(problems) == {"r-2", "r-4"} and problems["r-2"].kind == "run"
    assert problems["r-2"].key == book.key("r-2")
    assert "schema_version 5" in problems["r-4"].reason
    with pytest.raises(SchemaVersionError):  # one record asked for by id still says why
        await book.get("r-4")
