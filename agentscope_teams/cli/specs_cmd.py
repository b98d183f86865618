"""``agentscope-teams specs check DIR``: validate a directory of subagent spec files.

It also names the MCP servers (its ``.mcp.json``, ``mcpServers`` in its spec files), the hooks
(``.claude/settings.json``, ``hooks:`` in its spec files), the ``allow`` permission rules of its
settings files and the grants of its spec files (a
``permissionMode`` above ``default``, ``tools:`` allow rules) of the project
that are not enabled because the project is not trusted, and how to enable them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..hooks import withheld_hooks
from ..hooks.settings_rules import withheld_rules
from ..mcp.project import project_mcp_json, untrusted_servers
from ..subagents.check import check_specs
from ..subagents.grants import withheld_grants
from ..subagents.spec import load_specs
from ..subagents.strict import strict_problems
from ..trust import ProjectTrust, untrusted_notice
from .common import (
    SubParsers,
    add_command,
    add_json_option,
    path_argument,
    print_json_line,
    stdout_console,
)

EXAMPLES = (
    "agentscope-teams specs check specs/",
    "agentscope-teams specs check specs/ --json",
    "agentscope-teams specs check --strict .claude/agents/",
)


def register(subparsers: SubParsers) -> None:
    group = add_command(
        subparsers, "specs", help="work with subagent spec files (specs/*.md)", examples=EXAMPLES
    )
    commands = group.add_subparsers(
        title="specs commands", dest="specs_command", metavar="COMMAND", required=True
    )
    check = add_command(
        commands,
        "check",
        help="load every spec in DIR and report specs, warnings and errors (file:line)",
        description="Load every *.md spec in DIR leniently and print a table of the specs, their "
        "warnings and every error with its file and line. Exit code 0 when every file loaded "
        "(warnings allowed), 1 when any file has an error. A frontmatter that is not valid YAML "
        "only because a value holds an unquoted ': ' loads with a warning; --strict refuses it.",
        examples=EXAMPLES,
    )
    check.add_argument("directory", metavar="DIR", type=path_argument, help="spec directory")
    check.add_argument(
        "--strict",
        action="store_true",
        help="also refuse what loads but would not behave as written: frontmatter that is not "
        "strict YAML (an unquoted value containing ': '), tools with no counterpart, unknown "
        "models, MCP servers not in the project's .mcp.json, Claude Code keys not acted on",
    )
    add_json_option(check)
    check.set_defaults(handler=handle_check)


def _configured_servers(directory: Path) -> list[str]:
    """The server names of the project's ``.mcp.json`` (none: an empty list)."""
    found = project_mcp_json(directory)
    if found is None:
        return []
    try:
        data = json.loads(found.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    return sorted(servers) if isinstance(servers, dict) else []


def handle_check(args: argparse.Namespace) -> int:
    if not args.json:
        code = check_specs(
            args.directory,
            console=stdout_console(),
            strict_yaml=args.strict,
            mcp_servers=_configured_servers(args.directory),
        )
        if args.directory.is_dir():
            loaded = load_specs(args.directory, strict=False, strict_yaml=args.strict)
            specs, trust = list(loaded.specs.values()), ProjectTrust()
            withheld = untrusted_servers(args.directory, specs, trust)
            withheld += withheld_hooks(args.directory, specs, trust)
            withheld += withheld_rules(args.directory, trust)
            withheld += withheld_grants(specs, trust)
            if withheld:
                stdout_console().print(untrusted_notice(withheld), style="yellow", markup=False)
        return code
    result = load_specs(args.directory, strict=False, strict_yaml=args.strict)
    if args.strict:
        result.errors += strict_problems(result, _configured_servers(args.directory))
    for name in sorted(result.specs):
        spec = result.specs[name]
        print_json_line(
            {"kind": "spec", **spec.model_dump(mode="json", exclude={"system_prompt", "extra"})}
        )
    for error in result.errors:
        print_json_line(
            {"kind": "error", "file": error.file, "line": error.line, "reason": error.reason}
        )
    specs, trust = list(result.specs.values()), ProjectTrust()
    withheld = untrusted_servers(args.directory, specs, trust)
    if args.directory.is_dir():
        withheld += withheld_hooks(args.directory, specs, trust)
        withheld += withheld_rules(args.directory, trust)
    withheld += withheld_grants(specs, trust)
    for found in withheld:
        print_json_line(
            {
                "kind": "not_enabled",
                "feature": found.feature,
                "name": found.name,
                "file": str(found.source),
                "project": str(found.root),
                "enable": "--trust-project, or agentscope-teams trust add PROJECT",
            }
        )
    return 1 if result.errors else 0
