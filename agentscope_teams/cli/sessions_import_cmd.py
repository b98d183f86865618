"""``agentscope-teams sessions import --from URL [--to STORE] [--dry-run]``: copy the sessions that
AgentScope 2.0's Redis or SQL storage holds into a store here.

One line per session (created / updated / unchanged / refused with the reason), then the counts.
Running it again changes nothing that did not change at the source. Exit 1 when a session was
refused, so scripts notice; the others are imported all the same.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from rich.text import Text

from ..agentscope_import import ImportReport, SessionImport, import_agentscope_sessions
from ..sessions import SessionStorage
from ..store.base import BaseStore
from .common import (
    add_command,
    add_json_option,
    print_json_line,
    stdout_console,
    with_store,
)
from .safe_text import terminal_safe

EXAMPLES = (
    "agentscope-teams sessions import --from redis://localhost:6379/0 --dry-run",
    "agentscope-teams sessions import --from sqlite:////srv/agentscope.db --to redis://localhost/1",
    "agentscope-teams sessions import --from 'redis://host/0?prefix=myapp' --org acme --json",
)
_STYLE = {"created": "green", "updated": "green", "unchanged": "dim", "refused": "red"}
_WOULD = {"created": "would create", "updated": "would update", "unchanged": "unchanged"}


def register(commands: Any) -> None:
    parser = add_command(
        commands,
        "import",
        help="import the sessions stored by AgentScope 2.0 (RedisStorage or its SQL storage)",
        examples=EXAMPLES,
    )
    parser.add_argument(
        "--from",
        dest="source",
        metavar="URL",
        required=True,
        help="where AgentScope stored them: redis://host:port/db (?prefix= for a custom key "
        "prefix) or sqlite:////path.db, postgresql://..., mysql://... (?table= for another table)",
    )
    parser.add_argument(
        "--to",
        dest="store",
        metavar="STORE_URL",
        default=argparse.SUPPRESS,
        help="the store to import into (same as --store)",
    )
    parser.add_argument(
        "--org", metavar="ORG", default=None, help="organization to import the sessions under"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="report what would be imported; write nothing"
    )
    add_json_option(parser)
    parser.set_defaults(handler=handle_import)


def _line(item: SessionImport, dry_run: bool) -> str:
    verb = _WOULD.get(item.outcome, item.outcome) if dry_run else item.outcome
    who = "/".join(x or "?" for x in (item.user_id, item.agent_id, item.session_id))
    text = f"{verb:<12} {who}  ({item.where})"
    if item.reason:
        text += f": {item.reason}"
    for note in item.notes:
        text += f"; {note}"
    return terminal_safe(text)  # ids and reasons come from the source: one line, no escapes


def _summary(report: ImportReport) -> str:
    counts = report.counts()
    converted = counts["created"] + counts["updated"] + counts["unchanged"]
    if report.dry_run:
        head, verbs = "would convert", ("would create", "would update")
    else:
        head, verbs = "converted", ("created", "updated")
    return (
        f"{head} {converted} session(s) from {report.source} ({verbs[0]} {counts['created']}, "
        f"{verbs[1]} {counts['updated']}, unchanged {counts['unchanged']}); "
        f"refused {counts['refused']}"
    )


def handle_import(args: argparse.Namespace) -> int:
    async def run(store: BaseStore) -> int:
        report = await import_agentscope_sessions(
            args.source, SessionStorage(store), org_id=args.org, dry_run=args.dry_run
        )
        if args.json:
            for item in report.sessions:
                print_json_line(dataclasses.asdict(item))
            print_json_line({"summary": report.counts(), "dry_run": report.dry_run})
        else:
            console = stdout_console()
            for item in report.sessions:
                console.print(
                    Text(_line(item, report.dry_run), style=_STYLE[item.outcome]), soft_wrap=True
                )
            console.print(Text(_summary(report), style="bold"), soft_wrap=True)
        return 1 if report.counts()["refused"] else 0

    return with_store(args, run)
