"""``serve --a2a``: the lead agent (:mod:`.serve_agents`) published over A2A at ``/a2a/<name>/``.

Callers authenticate with the control plane's operator tokens (the one ``serve`` prints, or
``serve --create-operator-token``), or with the static tokens of ``--a2a-tokens FILE``; each call
runs as the (org, user) of its token. ``--a2a-public-card`` lets anyone read the Agent Card,
``--a2a-anonymous`` lets anyone call (as the anonymous user). See ``docs/a2a.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..compose import HarnessAgent
from ..store.base import BaseStore
from .common import CommandError

MOUNT = "/a2a"


def add_bearer_options(group: Any, protocol: str) -> None:
    """``--<protocol>-tokens FILE`` and ``--<protocol>-anonymous``: who may call a published agent
    besides the control plane's operator tokens (``group``: an argparse argument group)."""
    group.add_argument(
        f"--{protocol}-tokens",
        metavar="FILE",
        type=Path,
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


def a2a_app_of(
    args: argparse.Namespace,
    store: BaseStore,
    lead: HarnessAgent,
    verifier: Callable[[Any, Any], Callable[[str], Awaitable[Any]]],
) -> Any:
    """The A2A app of ``lead``; ``verifier(static, Caller)`` is the control plane's token
    verifier (trying the static tokens first) making callers."""
    try:
        from ..a2a_server import Caller, ExposedAgent, StaticTokens, a2a_app
    except ImportError as exc:
        raise CommandError(
            f"serve --a2a needs the a2a extra: pip install 'agentscope-teams[a2a]' ({exc})"
        ) from None
    static = StaticTokens.from_file(args.a2a_tokens) if args.a2a_tokens else None
    return a2a_app(
        [ExposedAgent(lead)],
        store,
        verifier=verifier(static, Caller),
        anonymous=args.a2a_anonymous,
        public_card=args.a2a_public_card,
    )


def mount_a2a(app: Any, args: argparse.Namespace) -> None:
    """Mount ``args.a2a_app`` (if any) at ``/a2a`` of the control plane ``app``."""
    if getattr(args, "a2a_app", None) is not None:
        app.mount(MOUNT, args.a2a_app)
        where = f"{MOUNT}/{args.name}/"
        print(
            f"A2A: agent {args.name} at {where} (card {where}.well-known/agent-card.json)",
            file=sys.stderr,
            flush=True,
        )
