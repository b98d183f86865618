"""``serve --a2a`` / ``serve --mcp``: the control plane also publishes the lead agent of ``--specs``.

One lead agent (``--name``, default ``lead``; ``--model`` as for ``run``) is open while the server
runs; ``--a2a`` publishes it over A2A at ``/a2a/<name>/`` (:mod:`.a2a_serve`), ``--mcp`` as an MCP
tool over streamable HTTP at ``/mcp``. Both take the control plane's operator tokens (the one
``serve`` prints, or ``serve --create-operator-token``) and the static tokens of their own token
file; each call runs as the (org, user) of its token, never as anything the request says. Nothing
is reachable without a known token unless the operator says so (``--a2a-anonymous``,
``--mcp-anonymous``). See ``docs/a2a.md`` and ``docs/mcp.md``. ``--max-tokens`` /
``--max-budget-usd`` cap what each caller's session spends (a spent one fails that caller's call
with the budget named: an MCP tool error, a failed A2A task) and ``--rate-limit`` keeps every
caller under the provider's limit (:mod:`.usage_option`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from ..store.base import BaseStore
from .a2a_serve import a2a_app_of, add_a2a_options, add_bearer_options, mount_a2a
from .common import CommandError, path_argument, spec_directory
from .sandbox_option import sandbox_option
from .usage_option import CALLER_NOTE, CALLER_SCOPE, add_usage_options, usage_options

MCP_PATH = "/mcp"
T = TypeVar("T")


def add_agent_options(parser: argparse.ArgumentParser) -> None:
    """The options of the published lead agent, ``serve --a2a`` and ``serve --mcp``."""
    group = parser.add_argument_group("the published lead agent (serve --a2a / --mcp)")
    group.add_argument("--specs", metavar="DIR", type=path_argument, default=Path("specs"))
    group.add_argument("--model", metavar="MODEL", help="the lead's model, as for `run --model`")
    group.add_argument("--name", default="lead", help="the exposed agent's name (default lead)")
    add_a2a_options(parser)
    mcp = parser.add_argument_group("MCP (serve --mcp; needs the mcp extra)")
    mcp.add_argument(
        "--mcp",
        action="store_true",
        help=f"also serve the lead agent as an MCP tool (streamable HTTP at {MCP_PATH})",
    )
    add_bearer_options(mcp, "mcp")
    add_usage_options(parser, CALLER_SCOPE, CALLER_NOTE)


def control_plane_verifier(
    store: BaseStore,
    static: Callable[[str], Awaitable[T | None]] | None,
    make: Callable[[str | None, str | None], T],
) -> Callable[[str], Awaitable[T | None]]:
    """A bearer token -> ``make(user, org)``: a token of ``static`` first, else an operator token
    of the control plane; None for anything else (member and stream tokens included)."""
    from ..server import ControlPlaneAuthError
    from ..server.auth import authenticate

    async def verify(token: str) -> T | None:
        if static is not None and (found := await static(token)) is not None:
            return found
        try:
            principal = await authenticate(store, token)
        except ControlPlaneAuthError:
            return None
        return make(principal.user_id, principal.org_id) if principal.is_operator else None

    return verify


def _verifier_of(store: BaseStore) -> Callable[[Any, Any], Callable[[str], Awaitable[Any]]]:
    return lambda static, make: control_plane_verifier(store, static, make)


def _mcp_server(args: argparse.Namespace, store: BaseStore, lead: Any) -> Any:
    try:
        from ..mcp_server import AgentTool, McpAgentServer, TokenTable
        from ..mcp_server.server import Identity
    except ImportError as exc:
        raise CommandError(
            f"serve --mcp needs the mcp extra: pip install 'agentscope-teams[mcp]' ({exc})"
        ) from None
    static = TokenTable.from_file(args.mcp_tokens).verify if args.mcp_tokens else None
    return McpAgentServer(
        [AgentTool(lead)],
        verifier=control_plane_verifier(store, static, Identity),
        anonymous=args.mcp_anonymous,
    )


async def serve_with_agents(
    args: argparse.Namespace,
    store: BaseStore,
    serve: Callable[[argparse.Namespace, BaseStore], Awaitable[int]],
) -> int:
    """Run ``serve(args, store)``; with ``--a2a`` / ``--mcp`` the lead agent is open meanwhile,
    ``args.a2a_app`` is its A2A app and ``args.mcp_app`` its MCP app (else None), whose MCP
    sessions run meanwhile."""
    args.a2a_app = args.mcp_app = None
    usage = usage_options(args)  # and the model string without its ?rate-limit query
    if not (getattr(args, "a2a", False) or getattr(args, "mcp", False)):
        if usage.budget is not None or usage.rate_limit is not None:
            raise CommandError(
                "--max-tokens, --max-budget-usd and --rate-limit apply to the published lead "
                "agent: add --a2a or --mcp (the control plane's own API runs no model)"
            )
        return await serve(args, store)
    from ..compose import HarnessAgent
    from .run_cmd import LEAD_PROMPT, _model

    specs = spec_directory(args)
    lead = HarnessAgent(
        args.name,
        _model(args.model, specs),
        LEAD_PROMPT,
        workspace=Path.cwd(),
        workspace_scope="session",  # callers of many identities: each session its own directory
        specs=specs,
        store=store,
        sandbox=sandbox_option(args) if hasattr(args, "sandbox") else None,
        usage=usage.governor(store, "session"),
    )
    async with lead, contextlib.AsyncExitStack() as stack:
        if args.a2a:
            args.a2a_app = a2a_app_of(args, store, lead, _verifier_of(store))
            stack.push_async_callback(args.a2a_app.aclose)  # a mount gets no lifespan
        if args.mcp:
            server = _mcp_server(args, store, lead)
            args.mcp_app = server.http_app(args.host)
            await stack.enter_async_context(server.running())
        return await serve(args, store)


def mount_agents(app: Any, args: argparse.Namespace) -> None:
    """Mount the apps :func:`serve_with_agents` made on the control plane ``app``."""
    mount_a2a(app, args)
    if getattr(args, "mcp_app", None) is not None:
        app.add_route(MCP_PATH, args.mcp_app, include_in_schema=False)
        app.router.routes.insert(0, app.router.routes.pop())  # before the dashboard's pages
        print(f"MCP: tool {args.name} at {MCP_PATH} (streamable HTTP)", file=sys.stderr, flush=True)
