"""``agentscope-teams trust [list|add|remove]`` and the ``--trust-project`` option of the commands
that load a project's specs (``run``, ``worker``, ``review``).

A project's own ``.mcp.json`` and the ``mcpServers`` inline in its spec files start servers only
once the project is trusted (:mod:`agentscope_teams.trust`). ``--trust-project`` trusts the project
of ``--specs`` and remembers it; ``trust add PATH`` does the same without running anything, ``trust
remove PATH`` forgets it, ``trust list`` shows the trusted roots. :func:`untrusted_note` is the
line the commands print when something was left off.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError
from ..hooks import withheld_hooks
from ..hooks.settings_rules import withheld_rules
from ..mcp.project import untrusted_servers
from ..project_memory import ProjectMemory, claude_project
from ..subagents.grants import withheld_grants
from ..trust import ProjectTrust, TrustStore, project_root, untrusted_notice
from .common import SubParsers, add_command, add_json_option, path_argument, print_json_line

EXAMPLES = (
    "agentscope-teams trust list",
    "agentscope-teams trust add ~/src/some-project",
    "agentscope-teams trust remove ~/src/some-project",
)


def add_trust_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--trust-project",
        action="store_true",
        help="trust the project of --specs and remember it: its .mcp.json and the mcpServers of "
        "its spec files may then start servers and get ${VAR} values (see `agentscope-teams "
        "trust`); without it they are left off",
    )


def project_trust(args: argparse.Namespace, specs: Path) -> ProjectTrust:
    """The trust of ``specs``' project: trusted and remembered with ``--trust-project``, else
    what the user's trust file says."""
    if getattr(args, "trust_project", False):
        TrustStore().trust(specs)
        return ProjectTrust(trusted=True)
    return ProjectTrust()


def project_memory(specs: Path | None, trust: ProjectTrust) -> ProjectMemory:
    """The project's CLAUDE.md memory, found as Claude Code finds it: from the project of
    ``specs`` when it is a ``.claude/agents`` folder, else from the current directory; the
    folders above it; the user's ``~/.claude/CLAUDE.md``. What went wrong is printed as notes."""
    start = claude_project(specs) or Path.cwd()
    memory = ProjectMemory.load(start, parents=True, user=Path.home() / ".claude", trust=trust)
    for notice in memory.notices:
        print(f"note: {notice}", file=sys.stderr, flush=True)
    return memory


def untrusted_note(specs_dir: Path, specs: Iterable[Any], trust: ProjectTrust) -> str:
    """What the project of ``specs_dir`` would start (MCP servers), run (hooks) or let its agents
    do without asking (permission modes, ``tools:`` allow rules, its settings files' allow rules)
    if trusted, and how to trust it; "" if nothing is left off."""
    specs = list(specs)
    withheld = untrusted_servers(specs_dir, specs, trust) + withheld_hooks(specs_dir, specs, trust)
    withheld += withheld_rules(specs_dir, trust)
    return untrusted_notice(withheld + withheld_grants(specs, trust))


def register(subparsers: SubParsers) -> None:
    group = add_command(
        subparsers,
        "trust",
        help="list, add or remove trusted projects (whose own MCP servers may start)",
        description="A project's .mcp.json and the mcpServers of its spec files start servers "
        "(and get ${VAR} values) only once the project is trusted. The decision is remembered "
        "per project root (the folder holding .claude/, or the spec folder itself) in "
        "$AGENTSCOPE_TEAMS_CONFIG_DIR/trusted-projects.json (default "
        "~/.config/agentscope-teams/).",
        examples=EXAMPLES,
    )
    commands = group.add_subparsers(
        title="trust commands", dest="trust_command", metavar="COMMAND", required=True
    )
    listing = add_command(commands, "list", help="the trusted project roots")
    add_json_option(listing)
    listing.set_defaults(handler=handle_list)
    for name, helptext, handler in (
        ("add", "trust the project of PATH and remember it", handle_add),
        ("remove", "forget the trust of the project of PATH", handle_remove),
    ):
        command = add_command(commands, name, help=helptext)
        command.add_argument(
            "path",
            metavar="PATH",
            type=path_argument,
            help="the project, its .claude/agents or a spec folder",
        )
        command.set_defaults(handler=handler)


def handle_list(args: argparse.Namespace) -> int:
    roots = TrustStore().roots()
    for root in roots:
        print_json_line({"kind": "trusted", "root": str(root)}) if args.json else print(root)
    if not roots and not args.json:
        print("no trusted projects")
    return 0


def handle_add(args: argparse.Namespace) -> int:
    if not Path(args.path).expanduser().exists():  # a typo would trust its nearest parent
        raise ConfigurationError(
            f"cannot trust {args.path}: no such file or folder; pass the project's folder, its "
            ".claude/agents folder or its .mcp.json"
        )
    root = TrustStore().trust(args.path)
    print(f"trusted {root}: its .mcp.json and spec mcpServers may start servers")
    return 0


def handle_remove(args: argparse.Namespace) -> int:
    root = project_root(args.path)
    if TrustStore().forget(root):
        print(f"no longer trusted: {root}")
        return 0
    print(f"{root} was not trusted")
    return 1
