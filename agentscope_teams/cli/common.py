"""What every command module shares: adding a subcommand, the common options, the store, output.

A command module exposes ``register(subparsers)``; it adds its parser with :func:`add_command` (which
gives it ``--store`` and ``--debug``, an examples epilog and raw formatting) and sets a handler with
``parser.set_defaults(handler=...)``. A handler takes the parsed namespace and returns the exit code;
one that needs the store runs ``with_store(args, body)``, where ``body(store)`` is a coroutine.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import textwrap
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, TypeAlias, cast
from urllib.parse import parse_qsl, urlsplit

import anyio
from rich.console import Console

from ..context import RuntimeContext, undecodable
from ..errors import AgentScopeTeamsError, ConfigurationError, MissingDependencyError
from ..errors import CommandError as CommandError  # re-exported: the commands raise it
from ..store.base import BaseStore
from ..store.redact import redact_url
from ..store.url import store_from_url
from .exits import OutputConsole
from .safe_text import json_safe

SubParsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Handler: TypeAlias = Callable[[argparse.Namespace], int]

STORE_ENV = "AGENTSCOPE_TEAMS_STORE"
USER_ENV = "AGENTSCOPE_TEAMS_USER"
ORG_ENV = "AGENTSCOPE_TEAMS_ORG"
#: The store URL forms, for messages.
STORE_FORMS = (
    "memory://, file:///path, sqlite:////path, postgresql://, mysql://, redis://host:port/db"
)
#: The session id of the CLI's own context (teams are scoped to org and user, not to a session).
CLI_SESSION = "cli"


def default_store_url() -> str:
    """``$AGENTSCOPE_TEAMS_STORE``, else the file store under ``~/.agentscope_teams/store``."""
    return os.environ.get(STORE_ENV) or "file://" + str(Path.home() / ".agentscope_teams" / "store")


def add_global_options(parser: argparse.ArgumentParser) -> None:
    """``--store`` and ``--debug``, accepted before the command and after it.

    Defaults are suppressed so that a value given before the command is not overwritten by the
    subcommand's parser; :func:`store_url` and :func:`debug_enabled` fill the defaults in.
    """
    parser.add_argument(
        "--store",
        metavar="URL",
        default=argparse.SUPPRESS,
        help=f"store URL (memory://, file:///path, sqlite:////path, postgresql://, mysql://, "
        f"redis://); default ${STORE_ENV} or file://~/.agentscope_teams/store",
    )
    parser.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help="show full tracebacks on errors",
    )


def port_number(text: str) -> int:
    """An argparse type: a TCP port from 0 (a free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0 to 65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number: use 0 to 65535")
    return port


def text_argument(text: str) -> str:
    """An argparse type for an id or name option: an empty one is a usage error, not the
    option's default (a script's unset variable would otherwise pick another session)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("it is empty; give a value, or leave the option out")
    return text


def path_argument(text: str) -> Path:
    """An argparse type for every path the command line takes: an empty one is a usage error
    (``Path("")`` would silently be the current directory: a script's unset variable)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "the path is empty; pass a file or folder (. for the current directory)"
        )
    return Path(text)


def add_identity_options(parser: argparse.ArgumentParser) -> None:
    """``--user`` and ``--org``: whose sessions / teams a command looks at."""
    parser.add_argument(
        "--user",
        metavar="USER",
        default=os.environ.get(USER_ENV),
        help=f"user id (default ${USER_ENV}, else the anonymous user)",
    )
    parser.add_argument(
        "--org",
        metavar="ORG",
        default=os.environ.get(ORG_ENV),
        help=f"organization id (default ${ORG_ENV}, else no organization)",
    )


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print machine-readable JSON lines instead of tables"
    )


def add_command(
    subparsers: SubParsers,
    name: str,
    *,
    help: str,
    description: str | None = None,
    examples: Sequence[str] = (),
    store_required: bool = False,
) -> argparse.ArgumentParser:
    """Add a subcommand parser with the global options and an ``examples:`` epilog.

    ``store_required``: the command refuses the default store; ``--store`` (before or after the
    command) or ``$AGENTSCOPE_TEAMS_STORE`` must name one, else it is a usage error (exit 2).
    """
    epilog = None
    if examples:
        epilog = "examples:\n" + "\n".join(f"  {line}" for line in examples)
    parser = subparsers.add_parser(
        name,
        help=help,
        description=textwrap.fill(description or help, width=90),
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_global_options(parser)
    parser.set_defaults(command_parser=parser, store_required=store_required)
    return parser


def check_store_given(args: argparse.Namespace) -> None:
    """Usage error (exit 2) when ``--store`` is empty (a script's unset variable: not the default
    store), or when a command that needs an explicit store got none."""
    if getattr(args, "store", None) == "":
        parser: argparse.ArgumentParser = args.command_parser
        given = [o for a in parser._actions if a.dest == "store" for o in a.option_strings]
        parser.error(
            f"{'/'.join(given)} is empty: give a store URL, or leave the option out for "
            f"${STORE_ENV} or the default store"
        )
    if getattr(args, "store_required", False) and not (
        getattr(args, "store", None) or os.environ.get(STORE_ENV)
    ):
        args.command_parser.error(f"--store URL is required (or set ${STORE_ENV})")


def spec_directory(args: argparse.Namespace) -> Path:
    """``--specs`` resolved; a CommandError naming it when it is not a directory."""
    specs: Path = args.specs.resolve()
    if not specs.is_dir():
        raise CommandError(f"spec directory {args.specs} does not exist; pass one with --specs")
    return specs


def undecodable_at(text: str) -> str | None:
    """Where ``text`` (an argument) holds a byte that is not UTF-8 (:func:`~..context.undecodable`),
    e.g. ``byte 0xff at character 1``; None when it is all text."""
    found = undecodable(text)
    return None if found is None else f"byte {found[0]:#04x} at character {found[1] + 1}"


def store_url(args: argparse.Namespace) -> str:
    url: str | None = getattr(args, "store", None)
    return url or default_store_url()


def debug_enabled(args: argparse.Namespace | None) -> bool:
    return bool(getattr(args, "debug", False))


def cli_context(args: argparse.Namespace) -> RuntimeContext:
    """The runtime context of the CLI user (``--user`` / ``--org``)."""
    return RuntimeContext(session_id=CLI_SESSION, user_id=args.user, org_id=args.org)


def with_store(args: argparse.Namespace, body: Callable[[BaseStore], Awaitable[int]]) -> int:
    """Open the store named by ``--store``, run ``body(store)`` and close the store."""
    url = store_url(args)

    async def runner() -> int:
        async with open_store(url) as store:
            return await body(store)

    return anyio.run(runner)


@asynccontextmanager
async def open_store(url: str) -> AsyncIterator[BaseStore]:
    """The store of ``url``, opened; whatever building or opening it raises outside the library's
    own errors (a driver's refusal of a query parameter, Redis refusing the database number)
    becomes one :class:`CommandError` naming the URL (password hidden) and what to check."""
    async with AsyncExitStack() as stack:
        try:
            store = await stack.enter_async_context(store_from_url(url))
        except (AgentScopeTeamsError, KeyboardInterrupt, anyio.get_cancelled_exc_class()):
            raise
        except Exception as exc:
            raise CommandError(store_problem(url, exc)) from exc
        # store_from_url is annotated as returning StoreBackend (the plumbing base class); every
        # backend it builds implements the BaseStore protocol.
        yield cast(BaseStore, store)


def store_problem(url: str, exc: Exception) -> str:
    """The one line for a store that could not be built or opened (password hidden). A
    ``TypeError`` from a URL with query parameters is the backend refusing one of them."""
    where = f"cannot open the store {redact_url(url)}"
    params = _query_names(url)
    if isinstance(exc, TypeError) and params:
        return (
            f"{where}: its backend does not take the query parameter(s) {', '.join(params)}; "
            "remove them or use the options listed in docs/reference/stores.md"
        )
    return (
        f"{where}: {error_text(exc)}; check the URL's host, database and query parameters "
        f"(forms: {STORE_FORMS}; see docs/reference/stores.md)"
    )


def _query_names(url: str) -> list[str]:
    """The names of ``url``'s query parameters (none for a URL Python cannot split)."""
    try:
        query = urlsplit(url).query
    except ValueError:  # "Invalid IPv6 URL": store_problem reports the backend's own error
        return []
    return sorted({k for k, _ in parse_qsl(query, keep_blank_values=True)})


def error_text(exc: BaseException) -> str:
    """``exc`` as ``Type: message`` on one line (the message alone for the library's errors)."""
    message = " ".join(str(exc).split()) or type(exc).__name__
    return message if isinstance(exc, AgentScopeTeamsError) else f"{type(exc).__name__}: {message}"


def require_mcp(config: Path, who: str) -> None:
    """A :class:`MissingDependencyError` when ``config`` names MCP servers for ``who`` and the
    ``mcp`` extra is not installed."""
    from ..mcp.config import load_mcp_json

    servers = load_mcp_json(config)
    if servers and importlib.util.find_spec("mcp") is None:
        raise MissingDependencyError(
            f"{config} configures MCP servers {sorted(servers)} for {who}, which", "mcp", ["mcp"]
        )


def not_available(command: str) -> int:
    """The handler of a command whose feature is not part of this build yet."""
    raise ConfigurationError(f"`agentscope-teams {command}` is not available yet in this build")


def stdout_console() -> Console:
    """Rich console for command output; markup and highlighting off so data prints literally."""
    return OutputConsole(highlight=False, markup=False)


def print_json_line(value: Any) -> None:
    """One JSON document on one line (``default=str`` handles datetimes and paths); control,
    bidirectional and invisible characters are ``\\u`` escapes (:func:`~.safe_text.json_safe`)."""
    print(json_safe(json.dumps(value, ensure_ascii=False, default=str)), flush=True)


def abbreviate(text: str, width: int = 120) -> str:
    """``text`` on one line, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def who(user: str | None, org: str | None) -> str:
    """``user 'alice'`` / ``the anonymous user``, with the org when there is one."""
    text = f"user {user!r}" if user is not None else "the anonymous user"
    return text + (f" in org {org!r}" if org is not None else "")


def identity_flags(user: str | None, org: str | None) -> str:
    """The ``--user`` / ``--org`` flags that select this identity again (for hints in errors)."""
    flags = f" --user {shlex.quote(user)}" if user is not None else ""
    return flags + (f" --org {shlex.quote(org)}" if org is not None else "")
