"""``agentscope-teams sessions`` with an undecodable session record: listed as a line, never fatal."""

from __future__ import annotations

import json

import pytest

from agentscope_teams.sessions import SessionStorage, session_key
from agentscope_teams.store.jsonfile import JsonFileStore

from .conftest import Cli, one_error_line


@pytest.fixture
def damaged(cli: Cli) -> Cli:
    """alice: lead/good and lead/bad (not JSON); reviewer/newer (a newer schema_version)."""

    async def seed(store: JsonFileStore) -> None:
        storage = SessionStorage(store)
        for agent, sid in (("lead", "good"), ("lead", "bad"), ("reviewer", "newer")):
            await storage.upsert_session(user_id="alice", agent_id=agent, session_id=sid)
        await store.put(session_key(None, "alice", "lead", "bad"), b"\x00garbage")
        await store.put(
            session_key(None, "alice", "reviewer", "newer"),
            json.dumps({"schema_version": 7}).encode(),
        )

    cli.with_store(seed)
    return cli


def test_list_shows_each_unreadable_session_as_one_line(damaged: Cli) -> None:
    result = damaged("sessions", "list", "--user", "alice")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    rows = [line for line in result.stdout.splitlines() if "│" in line]
    assert len(rows) == 1 and "good" in rows[0]
    bad = [line for line in result.stdout.splitlines() if "cannot be read" in line]
    assert len(bad) == 2, result.stdout
    line = next(x for x in bad if "'bad'" in x)
    assert "agent 'lead'" in line and "sessions delete bad --agent lead --user alice" in line
    assert "schema_version 7" in next(x for x in bad if "'newer'" in x)


def test_list_json_keeps_stdout_to_readable_sessions(damaged: Cli) -> None:
    result = damaged("sessions", "list", "--user", "alice", "--json")
    assert result.returncode == 0, result.stderr
    assert [json.loads(x)["session_id"] for x in result.stdout.splitlines()] == ["good"]
    warnings = result.stderr.splitlines()
    assert len(warnings) == 2 and all(w.startswith("warning: ") for w in warnings), warnings


def test_show_names_the_reason_and_delete_removes_the_record(damaged: Cli) -> None:
    for args in (("--agent", "lead"), ()):
        shown = damaged("sessions", "show", "bad", *args, "--user", "alice")
        assert shown.returncode == 1
        line = one_error_line(shown)
        assert "session 'bad' of agent 'lead' cannot be read" in line
        assert "sessions delete bad --agent lead" in line
    deleted = damaged("sessions", "delete", "newer", "--user", "alice")
    assert deleted.returncode == 0, deleted.stderr
    assert "deleted session 'newer' of agent 'reviewer'" in deleted.stdout
    deleted = damaged("sessions", "delete", "bad", "--agent", "lead", "--user", "alice")
    assert deleted.returncode == 0, deleted.stderr
    listed = damaged("sessions", "list", "--user", "alice")
    assert "cannot be read" not in listed.stdout and "good" in listed.stdout
