"""Text read from a store never drives the terminal: escape sequences, carriage returns, newlines
in ids (forged report lines), bidirectional overrides and rich markup are printed as visible,
inert text by ``sessions import``, ``sessions list|show`` and ``team tasks|messages``.

The console script runs with ``TERM=dumb`` and a pipe, so rich adds no escape sequence of its
own: any ESC in the output came from the data. Each test first checks the store really holds the
raw attack (the control), then that the output shows it escaped.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import Msg, TextBlock
from agentscope_teams.sessions import SessionStorage
from agentscope_teams.state import AgentState
from agentscope_teams.store.jsonfile import JsonFileStore
from agentscope_teams.teams import LocalTeamClient, Member

from ..backends import REDIS_URL
from ..conftest import require_service
from .conftest import Cli

ESC_TITLE = "\x1b]0;pwned\x07"  # sets the terminal's title
CLEAR = "\x1b[2J"
RTL = "\u202e"  # right-to-left override
MARKUP = "[red]x[/red]"
RAW = ("\x1b", "\x07", RTL, "\r")


def assert_inert(text: str) -> None:
    for char in RAW:
        assert char not in text, (char, text)


def test_session_content_and_markup_print_as_text(cli: Cli) -> None:
    content = f"hello{CLEAR} {MARKUP} exe.{RTL}txt\rOVERWRITTEN"

    async def seed(store: JsonFileStore) -> str:
        state = AgentState(session_id="s1")
        state.context.append(Msg(role="user", name="user", content=[TextBlock(text=content)]))
        await SessionStorage(store).upsert_session("alice", "helper", state=state, session_id="s1")
        record = await SessionStorage(store).get_session("alice", "helper", "s1")
        assert record is not None
        return record.state.context[0].blocks[0].text  # type: ignore[union-attr]

    assert cli.with_store(seed) == content  # control: the store holds the raw attack
    shown = cli("sessions", "show", "s1", "--agent", "helper", "--user", "alice")
    assert shown.returncode == 0, shown.stderr
    assert_inert(shown.stdout)
    assert MARKUP in shown.stdout  # printed, not interpreted
    assert "\\x1b[2J" in shown.stdout and "\\u202e" in shown.stdout  # (rich drops a bare \\r)
    as_json = cli("sessions", "show", "s1", "--agent", "helper", "--user", "alice", "--json")
    assert RTL not in as_json.stdout and "\\u202e" in as_json.stdout
    assert json.loads(as_json.stdout)["state"]["context"][0]["content"][0]["text"] == content


def test_team_titles_and_messages_print_as_text(cli: Cli) -> None:
    title = f"Review {MARKUP} {RTL}fdp.exe"  # (a title with control characters is refused)

    async def seed(store: JsonFileStore) -> None:
        client = LocalTeamClient(store, RuntimeContext(session_id="s", user_id="alice"))
        team = await client.create_team("t1", members=[Member(name="bob", spec="reviewer")])
        await client.assign_task(team.id, title)
        await client.send_message(team.id, "lead", "bob", f"note {RTL}gnp.exe {MARKUP}")

    cli.with_store(seed)
    tasks = cli("team", "tasks", "t1", "--user", "alice")
    assert tasks.returncode == 0, tasks.stderr
    assert_inert(tasks.stdout)
    assert "[red]x[/red]" in tasks.stdout and "\\u202efdp.exe" in tasks.stdout
    messages = cli("team", "messages", "t1", "--user", "alice")
    assert messages.returncode == 0, messages.stderr
    assert_inert(messages.stdout)
    out = messages.stdout
    assert "note \\u202egnp.exe [red]x" in out
    as_json = cli("team", "tasks", "t1", "--user", "alice", "--json")
    assert RTL not in as_json.stdout and json.loads(as_json.stdout)["title"] == title


FORGED = "s-x\nconverted 99 session(s) from nowhere; refused 0"


@pytest.fixture
def hostile_source() -> Iterator[str]:
    """An AgentScope Redis source whose one record has a hostile id (in its key and its JSON)."""
    require_service("redis")
    import redis

    prefix = "astest-" + uuid.uuid4().hex[:10]
    client = redis.Redis.from_url(REDIS_URL)
    sid = f"{FORGED}{ESC_TITLE}{RTL}{MARKUP}\r"
    value = {"id": sid, "user_id": "u", "agent_id": "a", "created_at": "x", "updated_at": "x"}
    client.set(f"{prefix}:user:u:session:{sid}", json.dumps(value))
    try:
        yield f"{REDIS_URL}?prefix={prefix}"
    finally:
        for name in client.scan_iter(match=f"{prefix}:*"):
            client.delete(name)
        client.close()


def test_import_report_cannot_be_forged(hostile_source: str, tmp_path: Path) -> None:
    done = Cli(tmp_path).run("sessions", "import", "--from", hostile_source, "--to", "memory://")
    assert done.returncode == 1, done.stderr  # the record is refused
    assert_inert(done.stdout)
    lines = done.stdout.splitlines()
    assert len(lines) == 2, lines  # one refused line, one summary: no forged line
    assert lines[0].startswith("refused") and "s-x\\nconverted 99" in lines[0]
    assert MARKUP in lines[0]
    assert lines[1].startswith("converted 0 session(s)")
    as_json = Cli(tmp_path).run(
        "sessions", "import", "--from", hostile_source, "--to", "memory://", "--json"
    )
    assert RTL not in as_json.stdout
    assert json.loads(as_json.stdout.splitlines()[0])["session_id"].startswith(FORGED)
