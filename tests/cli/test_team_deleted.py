"""``team show|tasks|messages`` when the team's DELETE lands while the command reads it.

The store wrapper deletes the team just before a chosen read (no timing), so the command either
fails on the read or reads a board / inbox already emptied: both must say the team was deleted.
"""

from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agentscope_teams.cli.team_cmd import _messages, _show, _tasks
from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import CommandError
from agentscope_teams.store.jsonfile import JsonFileStore
from agentscope_teams.teams import LocalTeamClient, Member

from ..server.deleting_store import DeletingStore, inbox_read, task_listing, task_read, team_keys


@pytest.fixture
async def racy(tmp_path: Path) -> AsyncIterator[DeletingStore]:
    async with JsonFileStore(tmp_path / "store") as store:
        yield DeletingStore(store)


@pytest.mark.parametrize(
    ("command", "when"),
    [
        ("show", "task listing"),
        ("tasks", "task listing"),
        ("tasks", "task read"),
        ("messages", "bob's inbox"),
        ("messages", "carol's inbox"),
    ],
)
async def test_a_team_deleted_while_it_is_read_is_reported_deleted(
    racy: DeletingStore, command: str, when: str
) -> None:
    client = LocalTeamClient(racy, RuntimeContext(session_id="s", user_id="alice"))  # type: ignore[arg-type]
    team = await client.create_team("crew", members=[Member(name="bob"), Member(name="carol")])
    task = await client.assign_task(team.id, "build")
    await client.send_message(team.id, "lead", "bob", "hi bob")
    await client.send_message(team.id, "lead", "carol", "hi carol")
    keys = team_keys(None, "alice", team.id)
    trigger = {
        "task listing": task_listing(keys),
        "task read": task_read(keys, [task.id]),
        "bob's inbox": inbox_read(keys, "bob"),
        "carol's inbox": inbox_read(keys, "carol"),
    }[when]
    racy.arm(None, "alice", team.id, trigger)
    args = argparse.Namespace(team=team.id, json=True, status=None, member=None, user="alice")
    body = {"show": _show, "tasks": _tasks, "messages": _messages}[command]
    if command == "show":
        args.json = False  # the JSON form prints the team record only

    with pytest.raises(CommandError) as caught:
        await body(client, args)

    assert racy.deletions == 1
    assert f"team 'crew' ({team.id}) was deleted while it was being read" in str(caught.value)
