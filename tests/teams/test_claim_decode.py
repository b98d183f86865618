"""A claimed (or any) task record decodes to the same ``Task`` by the lean path as by the full one.

``Task.from_bytes`` skips the model's before-validator for records it would leave unchanged
(``rules.models._lean_task``). Here both paths read varied records: as pydantic writes them, as the
Redis scripts write them (cjson: no spaces, ``\\/``, integral floats as integers), with history,
unicode, blockers and trace context; and records the lean path must leave to the full one: a
structured field stored as text, a newer schema version, malformed ones.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from agentscope_teams.errors import SchemaVersionError
from agentscope_teams.teams import TaskStatus
from agentscope_teams.teams.rules import models
from agentscope_teams.teams.rules.models import Task, TaskEvent

AT = datetime(2026, 12, 6, 4, 0, 0, 123456, tzinfo=UTC)


def full(raw: bytes, version: int) -> Task:
    task = Task.model_validate_json(raw)
    task.version = version
    return task


def task(**fields: Any) -> Task:
    base: dict[str, Any] = {"id": "t-7", "seq": 7, "title": "review the patch"}
    return Task(**(base | fields))


def cjson_like(t: Task) -> bytes:
    """The record as the Redis scripts re-encode it (compact, ``/`` escaped, 60.0 as 60)."""
    record = json.loads(t.to_bytes())
    if record["lease_seconds"] == int(record["lease_seconds"]):
        record["lease_seconds"] = int(record["lease_seconds"])
    text = json.dumps(record, separators=(",", ":"), ensure_ascii=False)
    return text.replace("/", "\\/").encode()


CLAIMED = task(
    status=TaskStatus.IN_PROGRESS,
    owner="b",
    attempts=1,
    lease_expires_at=datetime(2026, 12, 6, 5, 0, 0, 123000, tzinfo=UTC),
    lease_seconds=3600,
    history=[
        TaskEvent(at=AT, actor="lead", action="created"),
        TaskEvent(at=AT, actor="b", action="claimed", detail="attempt 1 of 3"),
    ],
)
RECORDS = {
    "new": task(),
    "claimed": CLAIMED,
    "unicode": task(
        title="revoir le correctif ✓ — 校对",
        description='naïve “quotes” "escaped" and a / slash',
        history=[TaskEvent(at=AT, actor="lead", action="created", detail="détail ✓")],
    ),
    "blocked, assigned, traced": task(
        blocked_by=["t-1", "t-2"],
        assignee="a",
        trace_context={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
    ),
    "finished": task(status=TaskStatus.COMPLETED, owner="a", result="done", attempts=2),
    "failed": task(status=TaskStatus.FAILED, error="the lease of 'a' expired", attempts=3),
    "whole seconds": task(created_at=datetime(2026, 1, 1, tzinfo=UTC)),
}


@pytest.mark.parametrize("name", list(RECORDS))
@pytest.mark.parametrize("form", ["pydantic", "cjson"])
def test_the_lean_decode_equals_the_full_one(name: str, form: str) -> None:
    assert models._LEAN_TASK is not None, "pydantic's Task schema changed shape: lean path off"
    raw = RECORDS[name].to_bytes() if form == "pydantic" else cjson_like(RECORDS[name])
    lean = models._lean_task(raw)
    if b"\\u" not in raw:  # an escape leaves the record to the full path, by design
        assert lean is not None
    got, expected = Task.from_bytes(raw, 5), full(raw, 5)
    assert type(got) is Task and got == expected
    assert got.model_fields_set == expected.model_fields_set
    assert [e.model_fields_set for e in got.history] == [
        e.model_fields_set for e in expected.history
    ]
    assert got.to_bytes() == expected.to_bytes()
    assert got.version == 5 and got.blocked_reason is None


def test_structured_fields_stored_as_text_take_the_full_path() -> None:
    t = task(result_schema={"type": "object"}, result_data={"ok": True, "n": [1, 2]})
    raw = t.to_bytes()
    assert b"result_schema_json" in raw
    assert models._lean_task(raw) is None
    got = Task.from_bytes(raw, 2)
    assert got.result_schema == {"type": "object"} and got.result_data == {"ok": True, "n": [1, 2]}
    assert got == full(raw, 2)


def test_a_key_spelled_with_escapes_takes_the_full_path() -> None:
    record = json.loads(task(result_data=[1]).to_bytes())
    text = json.dumps(record).replace("result_data_json", "result_data\\u005fjson")
    raw = text.encode()
    assert models._lean_task(raw) is None
    assert Task.from_bytes(raw, 1).result_data == [1]


def test_a_newer_schema_version_still_raises_clearly() -> None:
    record = json.loads(task().to_bytes()) | {"schema_version": 2}
    with pytest.raises(SchemaVersionError, match="schema_version 2"):
        Task.from_bytes(json.dumps(record).encode(), 1)


@pytest.mark.parametrize(
    "change",
    [
        {"title": ""},
        {"lease_seconds": 0},
        {"max_attempts": 0},
        {"status": "paused"},
        {"seq": "seven"},
        {"history": [{"actor": "x"}]},
        {"created_at": "yesterday"},
    ],
)
def test_a_malformed_record_raises_as_before(change: dict[str, Any]) -> None:
    raw = json.dumps(json.loads(task().to_bytes()) | change).encode()
    assert models._lean_task(raw) is None
    with pytest.raises(ValidationError) as lean_error:
        Task.from_bytes(raw, 1)
    with pytest.raises(ValidationError) as full_error:
        Task.model_validate_json(raw)
    assert lean_error.value.errors() == full_error.value.errors()


def test_a_record_that_is_not_json_raises_as_before() -> None:
    with pytest.raises(ValidationError, match="Invalid JSON"):
        Task.from_bytes(b"{not json", 1)


def test_the_lean_validator_skips_the_before_validator() -> None:
    """pydantic-core reuses a complete model's own validator, its before-validator with it, for a
    schema naming the class: the lean one must be built apart, or it saves nothing (a newer
    schema version, refused by the before-validator, shows which one runs)."""
    raw = json.dumps(json.loads(task().to_bytes()) | {"schema_version": 2}).encode()
    assert models._LEAN_TASK is not None
    assert models._LEAN_TASK.validate_json(raw).schema_version == 2
    with pytest.raises(SchemaVersionError):
        Task.model_validate_json(raw)
    assert type(Task.model_validate_json(task().to_bytes())) is Task  # Task's own still complete
