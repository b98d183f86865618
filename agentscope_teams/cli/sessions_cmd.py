"""``agentscope-teams sessions list|show|clear|delete|import``: stored agent sessions of one user
(``import``: see :mod:`.sessions_import_cmd`).

A session record that cannot be decoded (corrupt, or written by a newer version) never makes a
command fail for the others: ``list`` shows it as one line (``--json``: a warning on stderr) with
the command that deletes it; ``show`` and ``clear`` of it say why it cannot be read; ``delete``
removes it without reading it.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import shlex
import sys
from collections.abc import Awaitable, Callable, Iterator
from typing import TypeAlias

from rich.text import Text

from ..errors import VersionConflict
from ..keys import SessionAddress
from ..listing import UNREADABLE, describe
from ..listing import log as listing_log
from ..sessions import SessionRecord, SessionStorage, Unreadable
from ..store.base import BaseStore
from ..store.url import redact_url
from .common import (
    CommandError,
    SubParsers,
    add_command,
    add_identity_options,
    add_json_option,
    identity_flags,
    print_json_line,
    stdout_console,
    store_url,
    text_argument,
    who,
    with_store,
)
from .safe_text import json_safe, terminal_safe
from .session_view import conversation, session_summary, sessions_table
from .sessions_import_cmd import register as register_import

EXAMPLES = (
    "agentscope-teams sessions list --user alice",
    "agentscope-teams sessions list --agent reviewer --user alice --json",
    "agentscope-teams sessions show SESSION --agent reviewer --user alice",
    "agentscope-teams sessions clear SESSION --agent reviewer --user alice",
    "agentscope-teams sessions delete SESSION --agent reviewer --user alice",
)

_Body: TypeAlias = Callable[[SessionStorage, argparse.Namespace], Awaitable[int]]
_AGENT_HELP = "the agent the session belongs to (optional when only one agent has SESSION)"


def register(subparsers: SubParsers) -> None:
    group = add_command(
        subparsers,
        "sessions",
        help="list, show, clear, delete or import stored sessions",
        examples=EXAMPLES,
    )
    commands = group.add_subparsers(
        title="sessions commands", dest="sessions_command", metavar="COMMAND", required=True
    )
    parser = add_command(
        commands, "list", help="list the sessions of a user (all agents)", examples=EXAMPLES[:2]
    )
    parser.add_argument(
        "--agent", metavar="NAME", type=text_argument, help="only the sessions of this agent"
    )
    add_identity_options(parser)
    add_json_option(parser)
    parser.set_defaults(handler=handle_list)

    specs = (
        ("show", "print a session's conversation, summary and tool calls", handle_show),
        ("clear", "forget a session's conversation, keeping its permissions", handle_clear),
        ("delete", "delete a session", handle_delete),
    )
    for i, (name, help, handler) in enumerate(specs):
        parser = add_command(commands, name, help=help, examples=EXAMPLES[2 + i : 3 + i])
        parser.add_argument("session", metavar="SESSION", help="session id")
        parser.add_argument("--agent", metavar="NAME", type=text_argument, help=_AGENT_HELP)
        add_identity_options(parser)
        if name == "show":
            add_json_option(parser)
        parser.set_defaults(handler=handler)
    register_import(commands)


def _storage_command(args: argparse.Namespace, body: _Body) -> int:
    async def run(store: BaseStore) -> int:
        with _problems_reported_here():
            return await body(SessionStorage(store), args)

    return with_store(args, run)


@contextlib.contextmanager
def _problems_reported_here() -> Iterator[None]:
    """The commands print unreadable records themselves; the listing's log warning would repeat
    them (as a stray line on stderr)."""

    def mute(record: logging.LogRecord) -> bool:
        return False

    listing_log.addFilter(mute)
    try:
        yield
    finally:
        listing_log.removeFilter(mute)


async def find_session(storage: SessionStorage, args: argparse.Namespace) -> SessionRecord:
    """The session named by ``SESSION`` / ``--agent``; a one-line error when it does not exist or
    cannot be read."""
    agent = await _agent_of(storage, args)
    try:
        record = await storage.get_session(args.user, agent, args.session, org_id=args.org)
    except UNREADABLE as exc:
        raise CommandError(_unreadable_line(args, agent, describe(exc))) from None
    if record is None:
        raise _missing(args)
    return record


async def _agent_of(storage: SessionStorage, args: argparse.Namespace) -> str:
    """``--agent``, or the one agent with a session ``SESSION`` (readable or not)."""
    if args.agent is not None:
        return str(args.agent)
    listing = await storage.list_sessions(args.user, org_id=args.org)
    agents = {r.agent_id for r in listing if r.session_id == args.session}
    agents |= {_agent(p) for p in listing.problems if p.id == args.session}
    if not agents:
        raise _missing(args)
    if len(agents) > 1:
        raise CommandError(
            f"session {args.session!r} of {who(args.user, args.org)} exists for several agents "
            f"({', '.join(sorted(map(repr, agents)))}); choose one with --agent NAME"
        )
    return agents.pop()


def _agent(problem: Unreadable) -> str:
    return SessionAddress.parse(problem.key).agent_id


def _unreadable_line(args: argparse.Namespace, agent: str, reason: str) -> str:
    """The line saying a session cannot be read, and the command that deletes it."""
    command = (
        f"agentscope-teams sessions delete {shlex.quote(args.session)} --agent "
        f"{shlex.quote(agent)}{identity_flags(args.user, args.org)}"
    )
    return (
        f"session {args.session!r} of agent {agent!r} cannot be read: {reason}; "
        f"delete it with `{command}`"
    )


def _missing(args: argparse.Namespace) -> CommandError:
    agent = f"agent {args.agent!r} of" if args.agent is not None else "any agent of"
    return CommandError(
        f"session {args.session!r} not found for {agent} {who(args.user, args.org)} in store "
        f"{redact_url(store_url(args))}; run `agentscope-teams sessions list"
        f"{identity_flags(args.user, args.org)}` to see the sessions"
    )


async def _list(storage: SessionStorage, args: argparse.Namespace) -> int:
    listing = await storage.list_sessions(args.user, args.agent, org_id=args.org)
    records = sorted(listing, key=lambda r: r.updated_at, reverse=True)
    bad = [
        _unreadable_line(argparse.Namespace(**{**vars(args), "session": p.id}), _agent(p), p.reason)
        for p in listing.problems
    ]
    if args.json:
        for record in records:
            print_json_line(session_summary(record))
        for line in bad:
            print(f"warning: {terminal_safe(line)}", file=sys.stderr, flush=True)
        return 0
    console = stdout_console()
    of_agent = f" of agent {args.agent!r}" if args.agent is not None else ""
    if records:
        console.print(sessions_table(records, f"Sessions{of_agent} of {who(args.user, args.org)}"))
    elif not bad:
        console.print(
            Text(
                f"no sessions{of_agent} for {who(args.user, args.org)} in store "
                f"{redact_url(store_url(args))}",
                style="yellow",
            )
        )
    for line in bad:  # one line each, whatever the terminal width
        console.print(Text(terminal_safe(line), style="red"), soft_wrap=True)
    return 0


async def _show(storage: SessionStorage, args: argparse.Namespace) -> int:
    record = await find_session(storage, args)
    if args.json:
        print(json_safe(record.model_dump_json()), flush=True)
    else:
        stdout_console().print(conversation(record))
    return 0


async def _clear(storage: SessionStorage, args: argparse.Namespace) -> int:
    record = await find_session(storage, args)
    count = len(record.state.context)
    record.state.clear_context()
    try:
        version = await storage.update_session_state(
            user_id=record.user_id,
            agent_id=record.agent_id,
            session_id=record.session_id,
            state=record.state,
            expected_version=record.version,
            org_id=record.org_id,
        )
    except VersionConflict as exc:
        raise CommandError(
            f"session {record.session_id!r} of agent {record.agent_id!r} changed while it was "
            "being cleared (an agent is using it); nothing was cleared, run the command again"
        ) from exc
    stdout_console().print(
        Text(
            f"cleared {count} message(s) from session {record.session_id!r} of agent "
            f"{record.agent_id!r}; permissions, tools and tasks kept (version {version})",
            style="green",
        )
    )
    return 0


async def _delete(storage: SessionStorage, args: argparse.Namespace) -> int:
    """Delete without reading the record: an unreadable session can be deleted too. The teams
    the session led that are still active end, as its lead's ``endTeam`` would (``docs/teams.md``)."""
    from ..context import RuntimeContext
    from ..teams import LocalTeamClient
    from ..teams.lifecycle import end_session_teams

    agent = await _agent_of(storage, args)
    deleted = await storage.delete_session(args.user, agent, args.session, org_id=args.org)
    if not deleted:  # absent, or deleted by somebody else in between
        raise _missing(args)
    out = stdout_console()
    out.print(Text(f"deleted session {args.session!r} of agent {agent!r}", style="green"))
    ctx = RuntimeContext(session_id=args.session, user_id=args.user, org_id=args.org)
    client = LocalTeamClient(storage.store, ctx)
    for team in await end_session_teams(client, storage.store, ctx, agent):
        out.print(Text(f"ended team {team.name!r} ({team.id}) that the session led"))
    return 0


def handle_list(args: argparse.Namespace) -> int:
    return _storage_command(args, _list)


def handle_show(args: argparse.Namespace) -> int:
    return _storage_command(args, _show)


def handle_clear(args: argparse.Namespace) -> int:
    return _storage_command(args, _clear)


def handle_delete(args: argparse.Namespace) -> int:
    return _storage_command(args, _delete)
