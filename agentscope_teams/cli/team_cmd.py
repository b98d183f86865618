"""``agentscope-teams team list|show|tasks|messages``: inspect the teams of one user in the store
(``delete``, ``archive`` and ``prune`` change them: :mod:`.team_admin`).

The inspecting commands are read-only: nothing here claims a task or acknowledges a message. ``TEAM`` is a team id or, when
it is unique, a team name. A team deleted while a command reads it (its board or its inboxes going
away half-way) is reported as deleted, never printed half-read (:func:`read_of`).
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable
from typing import TypeAlias, TypeVar

from rich.text import Text

from ..errors import AgentScopeTeamsError
from ..store.base import BaseStore
from ..store.url import redact_url
from ..teams import LocalTeamClient, TaskStatus, Team, TeamMessage, UnknownTeamError
from ..teams.lifecycle import visible
from . import team_admin
from .common import (
    CommandError,
    SubParsers,
    add_command,
    add_identity_options,
    add_json_option,
    cli_context,
    identity_flags,
    print_json_line,
    stdout_console,
    store_url,
    text_argument,
    who,
    with_store,
)
from .team_view import messages_table, tasks_table, team_detail, teams_table

EXAMPLES = (
    "agentscope-teams team list --user alice",
    "agentscope-teams team show TEAM --user alice",
    "agentscope-teams team tasks TEAM --status pending --user alice",
    "agentscope-teams team messages TEAM --member reviewer --user alice",
    *team_admin.EXAMPLES,
)
_PAGE = 500

_Body: TypeAlias = Callable[[LocalTeamClient, argparse.Namespace], Awaitable[int]]
R = TypeVar("R")


def register(subparsers: SubParsers) -> None:
    group = add_command(
        subparsers,
        "team",
        help="inspect agent teams, their task boards and mailboxes",
        examples=EXAMPLES,
    )
    commands = group.add_subparsers(
        title="team commands", dest="team_command", metavar="COMMAND", required=True
    )
    parser = add_command(
        commands,
        "list",
        help="list the active teams of a user (--all: ended and archived ones too)",
        examples=EXAMPLES[:1],
    )
    parser.add_argument(
        "--all", action="store_true", help="also list the teams that ended (completed, archived)"
    )
    _finish(parser, _list, team=False)
    parser = add_command(
        commands, "show", help="a team's members and task counts", examples=EXAMPLES[1:2]
    )
    _finish(parser, _show)
    parser = add_command(commands, "tasks", help="a team's task board", examples=EXAMPLES[2:3])
    parser.add_argument(
        "--status",
        choices=[s.value for s in TaskStatus],
        help="only the tasks with this status",
    )
    _finish(parser, _tasks)
    parser = add_command(
        commands,
        "messages",
        help="the messages in a team's mailboxes (all members, or one)",
        examples=EXAMPLES[3:4],
    )
    parser.add_argument(
        "--member", metavar="NAME", type=text_argument, help="only the inbox of this member"
    )
    _finish(parser, _messages)
    team_admin.register(commands, _finish)


def _finish(parser: argparse.ArgumentParser, body: _Body, *, team: bool = True) -> None:
    if team:
        parser.add_argument("team", metavar="TEAM", help="team id (or unique team name)")
    add_identity_options(parser)
    add_json_option(parser)

    def handler(args: argparse.Namespace) -> int:
        async def run(store: BaseStore) -> int:
            return await body(LocalTeamClient(store, cli_context(args)), args)

        return with_store(args, run)

    parser.set_defaults(handler=handler)


async def resolve_team(client: LocalTeamClient, args: argparse.Namespace) -> Team:
    """The team whose id, or else whose (unique) name, is ``TEAM``."""
    try:
        return await client.get_team(args.team)
    except UnknownTeamError:
        pass
    matches = [t for t in await client.list_teams() if t.name == args.team]
    if len(matches) == 1:
        return matches[0]
    if matches:
        ids = ", ".join(t.id for t in matches)
        raise CommandError(f"several teams are named {args.team!r} ({ids}); name one by its id")
    raise CommandError(
        f"no team with id or name {args.team!r} for {who(args.user, args.org)} in store "
        f"{redact_url(store_url(args))}; run `agentscope-teams team list"
        f"{identity_flags(args.user, args.org)}` to see the teams"
    )


async def read_of(client: LocalTeamClient, team: Team, read: Awaitable[R]) -> R:
    """What ``read`` (of ``team``'s board or inboxes) returns, unless the team was deleted meanwhile.

    Reading the team again after ``read`` (failed or not, see ``LocalTeamClient.is_deleted``) tells
    a read that met the delete from a read of a live team.
    """
    try:
        result = await read
    except AgentScopeTeamsError:
        if not await client.is_deleted(team.id):
            raise
        raise _deleted(team) from None
    if await client.is_deleted(team.id):
        raise _deleted(team)
    return result


def _deleted(team: Team) -> CommandError:
    return CommandError(
        f"team {team.name!r} ({team.id}) was deleted while it was being read; "
        "`agentscope-teams team list` shows the teams left"
    )


async def _list(client: LocalTeamClient, args: argparse.Namespace) -> int:
    every = await client.list_teams()
    teams = visible(every, include_ended=args.all)
    if args.json:
        for team in teams:
            print_json_line(team.model_dump(mode="json"))
        return 0
    console = stdout_console()
    hidden = len(every) - len(teams)
    if not teams:
        which = "active " if hidden else ""
        console.print(Text(f"no {which}teams for {who(args.user, args.org)}", style="yellow"))
    else:
        console.print(teams_table(teams, f"Teams of {who(args.user, args.org)}"))
    if hidden:
        console.print(Text(f"{hidden} ended team(s) not shown; --all lists them", style="dim"))
    return 0


async def _show(client: LocalTeamClient, args: argparse.Namespace) -> int:
    team = await resolve_team(client, args)
    if args.json:
        print_json_line(team.model_dump(mode="json"))
        return 0
    tasks = await read_of(client, team, client.list_tasks(team.id))
    stdout_console().print(team_detail(team, tasks))
    return 0


async def _tasks(client: LocalTeamClient, args: argparse.Namespace) -> int:
    team = await resolve_team(client, args)
    status = TaskStatus(args.status) if args.status else None
    tasks = await read_of(client, team, client.list_tasks(team.id, status))
    if args.json:
        for task in tasks:
            print_json_line(task.model_dump(mode="json"))
        return 0
    console = stdout_console()
    label = f" {status.value}" if status else ""
    if not tasks:
        console.print(Text(f"no{label} tasks on the board of team {team.name!r}", style="yellow"))
    else:
        console.print(tasks_table(tasks, f"Tasks of team {team.name!r} ({team.id})"))
    return 0


async def _inbox(client: LocalTeamClient, team_id: str, member: str) -> list[TeamMessage]:
    """Every message of ``member``'s inbox, without acknowledging any."""
    messages: list[TeamMessage] = []
    while True:
        after = messages[-1].seq if messages else 0
        page = await client.read_messages(team_id, member, after=after, limit=_PAGE)
        messages += page
        if len(page) < _PAGE:
            return messages


async def _inboxes(client: LocalTeamClient, team_id: str, members: list[str]) -> list[TeamMessage]:
    return [m for member in members for m in await _inbox(client, team_id, member)]


async def _messages(client: LocalTeamClient, args: argparse.Namespace) -> int:
    team = await resolve_team(client, args)
    members = [args.member] if args.member else team.participants()
    messages = await read_of(client, team, _inboxes(client, team.id, members))
    messages.sort(key=lambda m: (m.sent_at, m.recipient, m.seq))
    if args.json:
        for msg in messages:
            print_json_line(msg.model_dump(mode="json"))
        return 0
    console = stdout_console()
    inbox = f"the inbox of {args.member!r} in " if args.member else ""
    if not messages:
        console.print(Text(f"no messages in {inbox}team {team.name!r}", style="yellow"))
    else:
        title = f"Messages in {inbox}team {team.name!r} ({team.id})"
        console.print(messages_table(messages, title))
    return 0
