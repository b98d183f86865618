"""One undecodable session record is reported by ``list_sessions`` and does not hide the rest."""

from __future__ import annotations

import json
import logging

import pytest

from agentscope_teams.errors import SchemaVersionError
from agentscope_teams.listing import Listing
from agentscope_teams.sessions import SessionStorage, session_key
from agentscope_teams.store import StoreBackend

pytestmark = pytest.mark.anyio


async def test_a_corrupt_session_is_reported_and_the_rest_are_listed(
    store: StoreBackend, ns: str, caplog: pytest.LogCaptureFixture
) -> None:
    storage = SessionStorage(store)
    for agent, sid in (("lead", "s1"), ("lead", "s2"), ("reviewer", "s3"), ("reviewer", "s4")):
        await storage.upsert_session(user_id="alice", agent_id=agent, session_id=sid, org_id=ns)
    await store.put(session_key(ns, "alice", "lead", "s2"), b"{not json")
    newer = json.loads((await store.get(session_key(ns, "alice", "reviewer", "s4"))).value)  # type: ignore[union-attr]
    newer["schema_version"] = 99
    await store.put(session_key(ns, "alice", "reviewer", "s4"), json.dumps(newer).encode())

    with caplog.at_level(logging.WARNING):
        listed = await storage.list_sessions("alice", org_id=ns)
    assert isinstance(listed, list) and isinstance(listed, Listing)
    assert sorted(r.session_id for r in listed) == ["s1", "s3"]
    problems = {p.id: p for p in listed.problems}
    assert set(problems) == {"s2", "s4"}
    assert problems["s2"].kind == "session"
    assert problems["s2"].key == session_key(ns, "alice", "lead", "s2")
    assert "JSON" in problems["s2"].reason and "\n" not in problems["s2"].reason
    assert "schema_version 99" in problems["s4"].reason and "upgrade" in problems["s4"].reason
    assert "s2" in caplog.text and "s4" in caplog.text

    of_lead = await storage.list_sessions("alice", "lead", org_id=ns)
    assert [r.session_id for r in of_lead] == ["s1"]
    assert [p.id for p in of_lead.problems] == ["s2"]
    with pytest.raises(SchemaVersionError):  # asking for that one record still says why
        await storage.get_session("alice", "lead", "s2", org_id=ns)
    assert (await storage.list_sessions("bob", org_id=ns)).problems == []
