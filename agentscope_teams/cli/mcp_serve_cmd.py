"""``agentscope-teams mcp-serve``: our lead agent (with the subagents of ``--specs``) as an MCP tool.

The tool is named ``lead`` (``--name``); see :mod:`agentscope_teams.mcp_server` and ``docs/mcp.md``.
Over stdio every call runs as ``--user`` / ``--org``; over HTTP (streamable, at ``/mcp``) only
the bearer tokens of ``--tokens FILE`` get in, each as the (org, user) the file maps it to. Over
stdio, stdout carries the protocol: nothing else is printed there. ``--max-tokens`` /
``--max-budget-usd`` cap each caller's session (a call on a spent one is a tool error naming the
budget) and ``--rate-limit`` is the model's limit shared by every caller (:mod:`.usage_option`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..compose import HarnessAgent
from ..store.base import BaseStore
from .common import (
    CommandError,
    SubParsers,
    add_command,
    add_identity_options,
    path_argument,
    port_number,
    spec_directory,
    with_store,
)
from .run_cmd import LEAD_PROMPT, _model
from .sandbox_option import add_sandbox_option, sandbox_option
from .trust_cmd import add_trust_option, project_trust
from .usage_option import CALLER_NOTE, CALLER_SCOPE, add_usage_options, usage_options

EXAMPLES = (
    "agentscope-teams mcp-serve --specs specs/ --model openai:gpt-4o-mini --user alice",
    "agentscope-teams --store redis://localhost:6379/0 mcp-serve --specs specs/ "
    "--transport http --port 8766 --tokens tokens.yaml",
)


def register(subparsers: SubParsers) -> None:
    parser = add_command(
        subparsers,
        "mcp-serve",
        help="serve the lead agent (with the subagents of --specs) as an MCP tool",
        description="Run an MCP server whose tool is the lead agent: input {message, session_id?}, "
        "output its final answer. Sessions are stored, so a conversation continues.",
        examples=EXAMPLES,
    )
    parser.add_argument(
        "--specs",
        metavar="DIR",
        type=path_argument,
        default=Path("specs"),
        help="subagent spec directory",
    )
    parser.add_argument("--model", metavar="MODEL", help="model, as for `run --model`")
    parser.add_argument("--name", default="lead", help="the tool's name (default lead)")
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default; calls run as --user/--org) or streamable HTTP at /mcp (--tokens)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="HTTP address (default 127.0.0.1)")
    parser.add_argument("--port", type=port_number, default=8766, help="HTTP port (default 8766)")
    parser.add_argument(
        "--tokens",
        metavar="FILE",
        type=path_argument,
        help="HTTP: JSON/YAML file mapping each bearer token to {user: USER, org: ORG}",
    )
    add_trust_option(parser)
    add_identity_options(parser)
    add_sandbox_option(parser)
    add_usage_options(parser, CALLER_SCOPE, CALLER_NOTE)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from ..mcp_server import AgentTool, McpAgentServer, TokenTable
    from ..mcp_server.server import Identity

    specs = spec_directory(args)
    if args.transport == "http" and args.tokens is None:
        raise CommandError("--transport http needs --tokens FILE (bearer token -> user, org)")
    tokens = TokenTable.from_file(args.tokens) if args.tokens is not None else None
    usage = usage_options(args)  # and the model string without its ?rate-limit query
    model = _model(args.model, specs)
    trust = project_trust(args, specs)
    sandbox = sandbox_option(args)

    async def body(store: BaseStore) -> int:
        async with HarnessAgent(
            args.name,
            model,
            LEAD_PROMPT,
            workspace=Path.cwd(),
            # stdio serves its one operator in this directory; HTTP serves every token's
            # identity, each session in a directory of its own below it (no caller reads another's)
            workspace_scope="shared" if args.transport == "stdio" else "session",
            specs=specs,
            store=store,
            trust_project=trust,
            sandbox=sandbox,
            usage=usage.governor(store, "session"),
        ) as lead:
            server = McpAgentServer(
                [AgentTool(lead)], operator=Identity(args.user, args.org), tokens=tokens
            )
            if args.transport == "stdio":
                await server.run_stdio()
            else:
                await _serve_http(server, args.host, args.port)
        return 0

    return with_store(args, body)


async def _serve_http(server: object, host: str, port: int) -> None:
    import uvicorn

    from ..mcp_server import McpAgentServer
    from .serve_cmd import _bind, _is_loopback

    assert isinstance(server, McpAgentServer)
    sock = _bind(host, port)
    bound = sock.getsockname()[1]
    print(f"agentscope-teams MCP server on http://{host}:{bound}/mcp", file=sys.stderr, flush=True)
    if not _is_loopback(host):
        print(
            f"warning: listening on {host} without TLS; put a TLS-terminating proxy in front so "
            "tokens never cross the network in clear text",
            file=sys.stderr,
            flush=True,
        )
    config = uvicorn.Config(server.http_app(host), log_level="warning", lifespan="on")
    try:
        await uvicorn.Server(config).serve(sockets=[sock])
    finally:
        sock.close()
