"""``review --resume`` finds a review that a newer release started: its record (kept in the lead
session's config) may hold a field this release does not know, in the record or its budget."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentscope_teams.cli.review_resume import ReviewRecord, find_interrupted, record_review
from agentscope_teams.keys import SessionAddress
from agentscope_teams.store import InMemoryStore
from agentscope_teams.usage import Budget

pytestmark = pytest.mark.anyio


async def test_a_review_record_with_newer_fields_is_found(tmp_path: Path) -> None:
    store = InMemoryStore()
    record = ReviewRecord(
        path=str(tmp_path), target=".", output="out.md", model="m", specs="s",
        budget=Budget(max_tokens=1000),
    )  # fmt: skip
    await record_review(store, "rv1", record)
    key = SessionAddress(None, None, "lead", "rv1").key
    entry = await store.get(key)
    assert entry is not None
    raw = json.loads(entry.value)
    review = raw["config"]["metadata"]["review"]
    review["future_option"] = "x"
    review["budget"]["max_calls"] = 5
    await store.put(key, json.dumps(raw).encode(), expected_version=entry.version)

    found = await find_interrupted(store, "rv1")
    assert found.record.path == str(tmp_path)
    assert found.record.budget is not None and found.record.budget.max_tokens == 1000


def test_a_budget_people_write_with_an_unknown_field_is_refused() -> None:
    with pytest.raises(ValueError, match="max_tokns"):
        Budget(max_tokns=5)  # type: ignore[call-arg]
