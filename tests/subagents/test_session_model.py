"""A session records the model that runs it (``SessionConfig.model``): the parent's and a child's."""

from __future__ import annotations

from pathlib import Path

from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore

from .helpers import ALICE, make_parent, runs, spawn


async def test_parent_and_child_sessions_record_their_models(tmp_path: Path) -> None:
    store = InMemoryStore()
    child = ScriptedModel(["LGTM"], name="child-model")
    lead = make_parent(tmp_path, store, [spawn("rev", "review a.py"), "done"], {"rev": child})
    await lead.call("review", ALICE)

    parent = await lead.sessions.get_session("alice", "lead", "s1", org_id="acme")
    assert parent is not None and parent.config.model == "lead"
    [rec] = await runs(store)
    saved = await lead.sessions.get_session("alice", "rev", rec.child_session, org_id="acme")
    assert saved is not None and saved.config.model == "child-model"
