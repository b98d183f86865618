"""``agentscope-teams sessions list|show|clear|delete`` against sessions written by SessionStorage."""

from __future__ import annotations

import json

import pytest

from agentscope_teams.message import AssistantMsg, TextBlock, ToolResultBlock, ToolUseBlock, UserMsg
from agentscope_teams.sessions import SessionConfig, SessionRecord, SessionStorage
from agentscope_teams.state import AgentState, PermissionRule, PlanTask
from agentscope_teams.store.jsonfile import JsonFileStore

from .conftest import Cli, one_error_line

LONG_OUTPUT = "line of file content " * 40


def _conversation() -> AgentState:
    state = AgentState(summary="Earlier the user asked for a [bold]review[/bold] of src/.")
    state.permission_context.rules.append(PermissionRule(tool="read_file", behavior="allow"))
    state.tasks_context.tasks += [
        PlanTask(title="Read src/app.py", status="completed"),
        PlanTask(title="Report findings", status="in_progress", active_form="Reporting findings"),
    ]
    state.context += [
        UserMsg("Please review src/app.py", name="alice"),
        AssistantMsg(
            [
                TextBlock(text="Reading the file first."),
                ToolUseBlock(id="call-1", name="read_file", input={"path": "src/app.py"}),
            ],
            name="reviewer",
        ),
        UserMsg(
            [ToolResultBlock(tool_use_id="call-1", name="read_file", output=LONG_OUTPUT)],
            name="tool",
        ),
        AssistantMsg(
            [ToolResultBlock(tool_use_id="call-2", name="grep_files", output="no", is_error=True)],
            name="reviewer",
        ),
        AssistantMsg("The file looks correct.", name="reviewer"),
    ]
    return state


@pytest.fixture
def seeded(cli: Cli) -> Cli:
    """alice: reviewer/s1 (a conversation), lead/s2 and reviewer/s2; bob: lead/b1; org acme."""

    async def seed(store: JsonFileStore) -> None:
        storage = SessionStorage(store)
        config = SessionConfig(model="openai:gpt-4o")
        await storage.upsert_session(
            user_id="alice",
            agent_id="reviewer",
            session_id="s1",
            state=_conversation(),
            config=config,
        )
        await storage.upsert_session(user_id="alice", agent_id="lead", session_id="s2")
        await storage.upsert_session(user_id="alice", agent_id="reviewer", session_id="s2")
        await storage.upsert_session(user_id="bob", agent_id="lead", session_id="b1")
        await storage.upsert_session(
            user_id="alice", agent_id="lead", session_id="in-acme", org_id="acme"
        )

    cli.with_store(seed)
    return cli


def _load(cli: Cli, agent: str, session: str, user: str = "alice") -> SessionRecord | None:
    async def get(store: JsonFileStore) -> SessionRecord | None:
        return await SessionStorage(store).get_session(user, agent, session)

    return cli.with_store(get)


def test_list_shows_the_sessions_of_one_user(seeded: Cli) -> None:
    result = seeded("sessions", "list", "--user", "alice")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if "│" in line]
    cells = [[c.strip() for c in row.split("│")[1:-1]] for row in rows]
    assert ["reviewer", "s1", "5", "1"] in [c[:4] for c in cells]
    assert {(c[0], c[1]) for c in cells} == {("reviewer", "s1"), ("lead", "s2"), ("reviewer", "s2")}
    assert all(c[5] == "user" for c in cells)
    assert "b1" not in result.stdout and "in-acme" not in result.stdout


def test_list_filters_and_json(seeded: Cli) -> None:
    result = seeded("sessions", "list", "--user", "alice", "--agent", "reviewer", "--json")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert sorted((line["agent_id"], line["session_id"]) for line in lines) == [
        ("reviewer", "s1"),
        ("reviewer", "s2"),
    ]
    s1 = next(line for line in lines if line["session_id"] == "s1")
    assert s1["messages"] == 5 and s1["version"] == 1 and s1["user_id"] == "alice"
    org = seeded("sessions", "list", "--user", "alice", "--org", "acme", "--json")
    assert [json.loads(line)["session_id"] for line in org.stdout.splitlines()] == ["in-acme"]


def test_show_renders_the_conversation(seeded: Cli) -> None:
    result = seeded("sessions", "show", "s1", "--agent", "reviewer", "--user", "alice")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "session s1  agent reviewer  user alice" in out
    assert "model openai:gpt-4o" in out
    assert "Earlier the user asked for a [bold]review[/bold] of src/." in out
    assert "Please review src/app.py" in out and "The file looks correct." in out
    assert '→ read_file({"path": "src/app.py"})' in out
    assert "← read_file: line of file content" in out
    assert LONG_OUTPUT.strip() not in out and "…" in out
    assert "✗ error from grep_files: no" in out
    assert out.index("Please review") < out.index("→ read_file") < out.index("looks correct")
    assert "[x] Read src/app.py" in out and "[~] Report findings" in out  # the task list
    assert "Now: Reporting findings" in out


def test_show_json_is_the_record(seeded: Cli) -> None:
    result = seeded("sessions", "show", "s1", "--agent", "reviewer", "--user", "alice", "--json")
    assert result.returncode == 0, result.stderr
    record = SessionRecord.model_validate_json(result.stdout)
    assert record == _load(seeded, "reviewer", "s1")


def test_show_finds_the_agent_when_unambiguous(seeded: Cli) -> None:
    result = seeded("sessions", "show", "s1", "--user", "alice")
    assert result.returncode == 0, result.stderr
    assert "agent reviewer" in result.stdout
    ambiguous = seeded("sessions", "show", "s2", "--user", "alice")
    assert ambiguous.returncode == 1
    assert "exists for several agents ('lead', 'reviewer')" in one_error_line(ambiguous)


def test_clear_keeps_permissions(seeded: Cli) -> None:
    result = seeded("sessions", "clear", "s1", "--agent", "reviewer", "--user", "alice")
    assert result.returncode == 0, result.stderr
    assert "cleared 5 message(s)" in result.stdout
    record = _load(seeded, "reviewer", "s1")
    assert record is not None
    assert record.state.context == [] and record.state.summary == ""
    assert record.state.permission_context.rules == [
        PermissionRule(tool="read_file", behavior="allow")
    ]
    assert record.version == 2 and record.config.model == "openai:gpt-4o"


def test_delete(seeded: Cli) -> None:
    result = seeded("sessions", "delete", "s1", "--agent", "reviewer", "--user", "alice")
    assert result.returncode == 0, result.stderr
    assert _load(seeded, "reviewer", "s1") is None
    assert _load(seeded, "reviewer", "s2") is not None
    again = seeded("sessions", "delete", "s1", "--agent", "reviewer", "--user", "alice")
    assert again.returncode == 1
    assert "session 's1' not found" in one_error_line(again)


@pytest.mark.parametrize("command", ["show", "clear", "delete"])
def test_missing_session_is_one_line(seeded: Cli, command: str) -> None:
    result = seeded("sessions", command, "s1", "--agent", "reviewer", "--user", "bob")
    assert result.returncode == 1
    line = one_error_line(result)
    assert "session 's1' not found for agent 'reviewer' of user 'bob'" in line
    assert "`agentscope-teams sessions list --user bob`" in line
    assert result.stdout == ""
    assert _load(seeded, "reviewer", "s1") is not None
