"""``serve --a2a``: the lead agent (:mod:`.serve_agents`) published over A2A at ``/a2a/<name>/``.

Callers authenticate with the control plane's operator tokens (the one ``serve`` prints, or
``serve --create-operator-token``), or with the static tokens of ``--a2a-tokens FILE``; each call
runs as the (org, user) of its token. ``--a2a-public-card`` lets anyone read the Agent Card,
``--a2a-anonymous`` lets anyone call (as the anonymous user). ``--public-url`` is where clients
reach the server (behind a proxy): the Agent Card names ``<URL>/a2a/<name>/`` (default: the bound
address, never a request's Host header). ``--a2a-task-retention`` is how long an ended task is
kept, ``--a2a-input-timeout`` how long a task waits for input before it is cancelled. See
``docs/a2a.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from ..compose import HarnessAgent
from ..store.base import BaseStore
from .common import CommandError, path_argument

MOUNT = "/a2a"


def add_bearer_options(group: Any, protocol: str) -> None:
    """``--<protocol>-tokens FILE`` and ``--<protocol>-anonymous``: who may call a published agent
    besides the control plane's operator tokens (``group``: an argparse argument group)."""
    group.add_argument(
        f"--{protocol}-tokens",
        metavar="FILE",
        type=path_argument,
        help="also accept the bearer tokens of FILE (JSON/YAML: TOKEN: {user: USER, org: ORG})",
    )
    group.add_argument(
        f"--{protocol}-anonymous",
        action="store_true",
        help="let callers without a token in (as the anonymous user)",
    )


def add_a2a_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``serve --a2a``."""
    group = parser.add_argument_group("A2A (serve --a2a; needs the a2a extra)")
    group.add_argument("--a2a", action="store_true", help="also serve the lead agent over A2A")
    add_bearer_options(group, "a2a")
    group.add_argument(
        "--a2a-public-card", action="store_true", help="serve the Agent Card without a token"
    )
    group.add_argument(
        "--public-url",
        metavar="URL",
        help="the URL clients reach this server at, e.g. https://agents.example.com behind a "
        f"proxy: the Agent Card names URL{MOUNT}/NAME/ (default: the address the server is bound "
        "to; never a request's Host header, which any client can set)",
    )
    group.add_argument(
        "--a2a-task-retention",
        metavar="SECONDS",
        type=float,
        default=None,
        help="how long an ended A2A task (completed, failed, cancelled) is kept for tasks/get and "
        "tasks/list before it is removed (default 86400, a day); running tasks stay",
    )
    group.add_argument(
        "--a2a-input-timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help="how long an A2A task waits for the caller's input (input-required) before it is "
        "cancelled, then kept as an ended task (default 604800, 7 days)",
    )


def _a2a_server() -> Any:
    try:
        from .. import a2a_server
    except ImportError as exc:
        raise CommandError(
            f"serve --a2a needs the a2a extra: pip install 'agentscope-teams[a2a]' ({exc})"
        ) from None
    return a2a_server


def check_a2a_options(args: argparse.Namespace) -> None:
    """Refuse a bad ``--public-url``, ``--a2a-task-retention`` or ``--a2a-input-timeout`` before
    anything starts (the rules are the A2A app's own:
    :func:`~agentscope_teams.a2a_server.app.check_public_url`,
    :mod:`~agentscope_teams.a2a_server.lifetimes`)."""
    if not getattr(args, "a2a", False):
        return
    _a2a_server()
    from ..a2a_server.app import check_public_url
    from ..a2a_server.lifetimes import check_input_timeout, check_retention

    if args.public_url is not None:
        check_public_url(args.public_url, "--public-url")
    if args.a2a_task_retention is not None:
        check_retention(args.a2a_task_retention, "--a2a-task-retention")
    if args.a2a_input_timeout is not None:
        check_input_timeout(args.a2a_input_timeout, "--a2a-input-timeout")


def a2a_app_of(
    args: argparse.Namespace,
    store: BaseStore,
    lead: HarnessAgent,
    verifier: Callable[[Any, Any], Callable[[str], Awaitable[Any]]],
) -> Any:
    """The A2A app of ``lead``; ``verifier(static, Caller)`` is the control plane's token
    verifier (trying the static tokens first) making callers."""
    check_a2a_options(args)
    server = _a2a_server()
    from ..a2a_server.lifetimes import INPUT_TIMEOUT_SECONDS, TASK_RETENTION_SECONDS

    static = server.StaticTokens.from_file(args.a2a_tokens) if args.a2a_tokens else None
    public = None if args.public_url is None else args.public_url.rstrip("/") + MOUNT
    retention, timeout = args.a2a_task_retention, args.a2a_input_timeout
    return server.a2a_app(
        [server.ExposedAgent(lead)],
        store,
        verifier=verifier(static, server.Caller),
        anonymous=args.a2a_anonymous,
        public_card=args.a2a_public_card,
        public_url=public,
        task_retention=TASK_RETENTION_SECONDS if retention is None else retention,
        input_timeout=INPUT_TIMEOUT_SECONDS if timeout is None else timeout,
    )


def mount_a2a(app: Any, args: argparse.Namespace) -> None:
    """Mount ``args.a2a_app`` (if any) at ``/a2a`` of the control plane ``app``."""
    if getattr(args, "a2a_app", None) is not None:
        app.mount(MOUNT, args.a2a_app)
        public = (args.public_url or "").rstrip("/")
        where = f"{public}{MOUNT}/{args.name}/"
        print(
            f"A2A: agent {args.name} at {where} (card {where}.well-known/agent-card.json)",
            file=sys.stderr,
            flush=True,
        )
