"""``agentscope-teams team delete|archive|prune|resume``: end and remove the teams of one user.

``delete`` removes a team's records (board, mailboxes) for good; ``archive`` ends it (members
stopped, records kept, hidden from ``team list`` without ``--all``); ``prune --older-than 7d``
deletes every ended team that ended longer ago than that (``--dry-run`` lists them); ``resume
TEAM MEMBER`` lifts the stop of a member a hook's ``continue: false`` stopped (``team show``
lists such a member with the hook's reason).
"""

from __future__ import annotations

import argparse
from collections.abc import Awaitable, Callable

from rich.text import Text

from ..teams import LocalTeamClient, TeamStatus
from ..teams.lifecycle import parse_age, prune_teams
from .common import (
    SubParsers,
    add_command,
    print_json_line,
    stdout_console,
    who,
)
from .session_view import timestamp
from .team_view import teams_table

EXAMPLES = (
    "agentscope-teams team delete TEAM --user alice",
    "agentscope-teams team archive TEAM --user alice",
    "agentscope-teams team prune --older-than 7d --dry-run --user alice",
    "agentscope-teams team resume TEAM MEMBER --user alice",
)
Finish = Callable[..., None]
Body = Callable[[LocalTeamClient, argparse.Namespace], Awaitable[int]]


def register(commands: SubParsers, finish: Finish) -> None:
    """Add ``delete``, ``archive`` and ``prune`` to the ``team`` commands (``finish`` adds the
    team argument, identity and ``--json`` options and the handler, as for the others)."""
    parser = add_command(
        commands, "delete", help="delete a team and its board and messages", examples=EXAMPLES[:1]
    )
    finish(parser, _delete)
    parser = add_command(
        commands,
        "archive",
        help="end a team (members stopped) and keep its records out of `team list`",
        examples=EXAMPLES[1:2],
    )
    finish(parser, _archive)
    parser = add_command(
        commands,
        "prune",
        help="delete the ended teams that ended longer ago than --older-than",
        examples=EXAMPLES[2:],
    )
    parser.add_argument(
        "--older-than",
        required=True,
        metavar="DURATION",
        help="e.g. 7d, 12h, 30m, 2w: teams that ended longer ago than this are deleted",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="list the teams that would be deleted, delete none"
    )
    finish(parser, _prune, team=False)
    parser = add_command(
        commands,
        "resume",
        help="let a member a hook stopped (continue: false) take work again",
        examples=EXAMPLES[3:],
    )
    finish(parser, _resume)
    parser.add_argument(
        "member", metavar="MEMBER", help="the member's name (team show lists why it stopped)"
    )


async def _delete(client: LocalTeamClient, args: argparse.Namespace) -> int:
    from .team_cmd import resolve_team

    team = await resolve_team(client, args)
    await client.delete_team(team.id)
    if args.json:
        print_json_line({"id": team.id, "name": team.name, "status": "deleted"})
    else:
        stdout_console().print(Text(f"deleted team {team.name!r} ({team.id})"))
    return 0


async def _archive(client: LocalTeamClient, args: argparse.Namespace) -> int:
    from .team_cmd import resolve_team

    team = await resolve_team(client, args)
    team = await client.set_team_status(team.id, TeamStatus.ARCHIVED)
    if args.json:
        print_json_line(team.model_dump(mode="json"))
    else:
        ended = timestamp(team.ended_at)
        stdout_console().print(
            Text(f"archived team {team.name!r} ({team.id}); ended at {ended} UTC")
        )
    return 0


async def _resume(client: LocalTeamClient, args: argparse.Namespace) -> int:
    from .team_cmd import resolve_team

    team = await resolve_team(client, args)
    before = team.member(args.member)
    member = await client.resume_member(team.id, args.member)
    if args.json:
        print_json_line(member.model_dump(mode="json"))
    elif before is not None and before.stop is None:
        stdout_console().print(Text(f"member {member.name!r} was not stopped by a hook"))
    else:
        stdout_console().print(
            Text(f"resumed member {member.name!r} of team {team.name!r}: new work wakes it")
        )
    return 0


async def _prune(client: LocalTeamClient, args: argparse.Namespace) -> int:
    age = parse_age(args.older_than)
    teams = await prune_teams(client, age, dry_run=args.dry_run)
    if args.json:
        for team in teams:
            print_json_line(team.model_dump(mode="json"))
        return 0
    console = stdout_console()
    verb = "would delete" if args.dry_run else "deleted"
    if not teams:
        console.print(
            Text(f"no team of {who(args.user, args.org)} ended more than {args.older_than} ago")
        )
        return 0
    title = (
        f"{verb} {len(teams)} team{'' if len(teams) == 1 else 's'} ended over {args.older_than} ago"
    )
    console.print(teams_table(teams, title))
    return 0
