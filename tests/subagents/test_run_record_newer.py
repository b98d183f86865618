"""A run record written by a newer release (a field this release does not know) is read here, and
an update this release makes (the run finishing) keeps that field for the newer release."""

from __future__ import annotations

import json

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents import RunBook, RunRecord, RunStatus

pytestmark = pytest.mark.anyio
ALICE = RuntimeContext(session_id="s1", user_id="alice")


async def test_a_run_record_with_an_unknown_field_loads_and_keeps_it() -> None:
    store = InMemoryStore()
    book = RunBook.for_ctx(store, ALICE)
    rec = RunRecord(
        run_id="r-1", parent_agent="lead", spec="rev", task="t", child_session="sub", depth=1,
        lease="holder",
    )  # fmt: skip
    await book.create(rec)
    raw = json.loads(rec.model_dump_json()) | {"hook_stop_v2": {"reason": "later"}}
    await store.put(book.key("r-1"), json.dumps(raw).encode(), expected_version=1)

    found = await book.get("r-1")
    assert found is not None and found.task == "t"
    assert [r.run_id for r in await book.list()] == ["r-1"]  # listed, not "unreadable"
    await book.update("r-1", lambda r: r.finished(RunStatus.COMPLETED, result="ok"))
    entry = await store.get(book.key("r-1"))
    assert entry is not None
    written = json.loads(entry.value)
    assert written["status"] == "completed" and written["hook_stop_v2"] == {"reason": "later"}
