"""An MCP server whose tools are our agents (official ``mcp`` SDK, low-level ``Server``).

Each :class:`AgentTool` is one tool named after its agent; its input is
``{message: str, session_id?: str}`` and its result the agent's final text (with an
``output_type``, also the validated value as MCP structured content, declared in the tool's
``outputSchema``).

Identity: over stdio every call runs as the configured operator (org, user); over HTTP only a
bearer token found in the :class:`TokenTable` is let in, and the call runs as the (org, user) that
token maps to. The store scopes sessions by (org, user, session), so a client only ever reaches the
sessions of its own identity, whatever ``session_id`` it sends. Without ``session_id`` a call
continues the conversation of its MCP session (one id per MCP session, made on its first call);
a sessionless HTTP request (protocol revision 2026-07-28) continues its caller's default one.
While a call runs, the caller gets progress notifications (when it asked for them).

A reply that pauses for confirmation (a tool call the permission rules ask about) is not an
answer: the result says the call awaits confirmation, names the tool calls and the ``reply_id``
(in the text and in ``_meta``); the pause stays stored, for whoever can confirm it (the Python
API, the control plane). A reply a PreToolUse hook deferred is not an answer either: the result
says so and the next call on the session (``message: ""``) resumes it (:mod:`.deferred`). A tool
with an output schema returns every such result as a tool error (:mod:`.results` has the rule).
Any failure of a call becomes an MCP tool error (``isError``), never a crash.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..agent.deferral import DEFERRED_TOOL_CALLS
from ..agent.output import OutputType
from ..compose import HarnessAgent
from ..context import RuntimeContext
from ..errors import AgentScopeTeamsError, ConfigurationError, public_message
from ..events import (
    HintEvent,
    ReplyEndEvent,
    ReplyInput,
    RequireUserConfirmEvent,
    TextDeltaEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from ..message import Msg
from ..token_file import (
    SEND_A_TOKEN,
    TokenDigests,
    read_token_file,
    refuse_unauthenticated,
    verify_credentials,
)
from . import results
from .deferred import deferred_result, nothing_to_resume
from .results import error as _error

log = logging.getLogger(__name__)

#: The input schema of every agent tool.
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {
            "type": "string",
            "description": "the user message for the agent (empty: resume tool calls a hook "
            "deferred in this session, adding no message)",
        },
        "session_id": {
            "type": "string",
            "description": "conversation to continue (default: the one of this MCP session)",
        },
    },
    "required": ["message"],
    "additionalProperties": False,
}
_DESCRIPTION_CHARS = 1000
#: Where the HTTP guard puts the caller's :class:`Identity` in the ASGI scope.
SCOPE_KEY = "agentscope_teams.mcp_identity"
#: How many default session ids the server remembers (oldest forgotten first).
MAX_DEFAULT_SESSIONS = 10_000


@dataclass
class AgentTool:
    """One agent exposed as a tool: ``description`` defaults to the agent's system prompt;
    ``output_type`` (as for ``HarnessAgent.call``) makes every call return structured output."""

    agent: HarnessAgent
    description: str = ""
    output_type: Any = None
    _schema: dict[str, Any] | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return self.agent.name

    def output_schema(self) -> dict[str, Any] | None:
        if self.output_type is None:
            return None
        if self._schema is None:
            schema = OutputType.of(self.output_type).json_schema
            self._schema = dict(schema) if schema.get("type") == "object" else {}
        return self._schema or None  # MCP output schemas are objects


@dataclass(frozen=True)
class Identity:
    user_id: str | None
    org_id: str | None


#: A bearer token -> the identity it acts as, or None when the token is not known.
IdentityVerifier = Callable[[str], Awaitable[Identity | None]]


class TokenTable(TokenDigests[Identity]):
    """Bearer tokens and the (org, user) each one acts as; only their SHA-256 is kept.

    The file (JSON or YAML) maps a token to ``{user: ..., org: ...}`` (``org`` optional;
    :mod:`agentscope_teams.token_file`).
    """

    @classmethod
    def from_file(cls, path: Path) -> TokenTable:
        return cls({t: Identity(user, org) for t, (user, org) in read_token_file(path).items()})

    async def verify(self, token: str) -> Identity | None:
        """The identity of a bearer token (an :data:`IdentityVerifier`)."""
        return self.find(token)

    def identity(self, authorization: str | None) -> Identity | None:
        """The identity of an ``Authorization`` header value; None when it is not a known token."""
        if not authorization or not authorization.lower().startswith("bearer "):
            return None
        return self.find(authorization[7:].strip())


class McpAgentServer:
    """The MCP server of ``tools``; :meth:`run_stdio` or :meth:`http_app` serve it.

    ``operator`` is who stdio calls run as. Over HTTP, ``verifier`` (or the ``tokens`` table)
    maps a bearer token to who the call runs as; one of them is required unless ``anonymous``
    (everyone may call, as the anonymous user). The agents must be open (``async with agent``)
    while the server runs.
    """

    def __init__(
        self,
        tools: Sequence[AgentTool],
        *,
        operator: Identity = Identity(None, None),
        tokens: TokenTable | None = None,
        verifier: IdentityVerifier | None = None,
        anonymous: bool = False,
        name: str = "agentscope-teams",
    ) -> None:
        from mcp.server.lowlevel import Server

        self.tools = {t.name: t for t in tools}
        if len(self.tools) != len(tools):
            raise ConfigurationError("two exposed agents have the same name; rename one")
        self.operator, self.tokens, self.anonymous = operator, tokens, anonymous
        self.verifier = verifier or (tokens.verify if tokens is not None else None)
        self._http: Any = None
        self._sessions: dict[tuple[Identity, str | None], str] = {}  # default session ids
        self.server: Any = Server(name, on_list_tools=self._list_tools, on_call_tool=self._call)

    async def run_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    def http_app(self, host: str = "127.0.0.1") -> Any:
        """A Starlette app serving streamable HTTP at ``/mcp``; a request without a known bearer
        token gets 401 before the SDK sees it (unless ``anonymous``). Its lifespan runs the MCP
        sessions; an app that mounts it without running lifespans enters :meth:`running`."""
        if self.verifier is None and not self.anonymous:
            raise ConfigurationError(
                "the HTTP transport needs a token table (--tokens FILE) or a token verifier"
            )
        if self._http is None:
            self._http = self.server.streamable_http_app(host=host)
        return _Guarded(self._http, self.verifier, anonymous=self.anonymous)

    def running(self) -> AbstractAsyncContextManager[Any]:
        """Run the MCP sessions of :meth:`http_app` (what its lifespan does) for a block."""
        if self._http is None:
            raise ConfigurationError("call http_app() before running() the MCP sessions")
        return cast(
            AbstractAsyncContextManager[Any], self._http.router.lifespan_context(self._http)
        )

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=(t.description or t.agent.system_prompt or t.name)[
                        :_DESCRIPTION_CHARS
                    ],
                    input_schema=INPUT_SCHEMA,
                    output_schema=t.output_schema(),
                )
                for t in self.tools.values()
            ]
        )

    def _identity(self, ctx: Any) -> Identity | None:
        request = getattr(ctx, "request", None)
        if request is None:  # stdio
            return self.operator
        found = request.scope.get(SCOPE_KEY)  # put there by _Guarded, from the credentials
        return found if isinstance(found, Identity) else None

    def _session_id(self, ctx: Any, who: Identity, given: Any) -> str:
        """``given``, else the default session of the caller: over HTTP one per MCP session
        (``Mcp-Session-Id``, protocol revisions up to 2025-11-25), or, for a sessionless request
        (revision 2026-07-28), one per identity, the same in every server process; over stdio
        one per server process (the client's own, so that is one per client)."""
        if isinstance(given, str) and given:
            return given
        request = getattr(ctx, "request", None)
        transport = request.headers.get("mcp-session-id") if request is not None else None
        if request is not None and not transport:
            owner = json.dumps([who.org_id, who.user_id]).encode()
            return "mcp-" + hashlib.sha256(owner).hexdigest()[:16]
        key = (who, transport)
        if key not in self._sessions:
            if len(self._sessions) >= MAX_DEFAULT_SESSIONS:  # forget the oldest MCP session
                del self._sessions[next(iter(self._sessions))]
            self._sessions[key] = "mcp-" + uuid.uuid4().hex[:16]
        return self._sessions[key]

    async def _call(self, ctx: Any, params: Any) -> Any:
        """The tool call's result; a failure is a tool error in its public form (a store error
        names no URL, host or database; an exception that is not a library error, a bug, says
        only its type: the server's log has the full message)."""
        try:
            return await self._run(ctx, params)
        except (AgentScopeTeamsError, ValueError) as exc:
            log.warning("MCP tool call %s failed: %s: %s", params.name, type(exc).__name__, exc)
            return _error(f"{type(exc).__name__}: {public_message(exc)}")
        except Exception as exc:  # never crashes the server; a bug's text stays in the log
            log.exception("MCP tool call %s failed", params.name)
            return _error(
                f"the agent failed ({type(exc).__name__}, an internal error); the server's log "
                "has the details"
            )

    async def _run(self, ctx: Any, params: Any) -> Any:
        tool = self.tools.get(params.name)
        if tool is None:
            return _error(f"unknown tool {params.name!r}; tools: {', '.join(sorted(self.tools))}")
        args = params.arguments or {}
        refused = _refused_arguments(tool.name, args)
        if refused is not None:
            return _error(refused)
        message = args["message"]
        who = self._identity(ctx)
        if who is None:
            return _error("no identity: the request carries no known bearer token")
        run_ctx = RuntimeContext(
            session_id=self._session_id(ctx, who, args.get("session_id")),
            user_id=who.user_id,
            org_id=who.org_id,
        )
        reply_input: ReplyInput = message
        if not message:  # the resume of calls a hook deferred
            state = await tool.agent.get_agent_state(run_ctx)
            if not state.deferred_tool_calls:
                return _error(nothing_to_resume(run_ctx.session_id))
            reply_input = None
        final: Msg | None = None
        progress, schema = _Progress(ctx), tool.output_schema() is not None
        async with aclosing(
            tool.agent.stream(reply_input, run_ctx, output_type=tool.output_type)
        ) as events:
            async for event in events:
                if isinstance(event, RequireUserConfirmEvent):
                    return results.paused(event, run_ctx.session_id, schema=schema)
                if isinstance(event, ReplyEndEvent):
                    final = event.msg
                await progress.report(event)
        if final is None:
            return _error("the agent ended without a reply")
        if final.metadata.get(DEFERRED_TOOL_CALLS) is not None:
            return deferred_result(final, run_ctx.session_id, schema=schema)
        typed = tool.output_type is not None
        return results.final(final, run_ctx.session_id, typed=typed, schema=schema)


def _refused_arguments(tool: str, args: dict[str, Any]) -> str | None:
    """What is wrong with ``args`` by :data:`INPUT_SCHEMA` (None when nothing): an argument it
    does not declare (``additionalProperties: false``: a misspelt ``session_id`` must not run in
    the default session), a missing or non-string ``message``, a non-string ``session_id``."""
    declared = INPUT_SCHEMA["properties"]
    unknown = sorted(name for name in args if name not in declared)
    if unknown:
        names = ", ".join(repr(name[:80]) for name in unknown)
        return (
            f"tool {tool!r} has no argument {names}; its arguments are 'message' (a string, "
            "required) and 'session_id' (a string, optional)"
        )
    message = args.get("message")
    if not isinstance(message, str):
        got = f"a {_json_type(message)}" if "message" in args else "none"
        return f"argument 'message' must be a string (got {got})"
    if args.get("session_id") is not None and not isinstance(args["session_id"], str):
        got = _json_type(args["session_id"])
        return f"argument 'session_id' must be a string (got a {got}); omit it for the default"
    return None


def _json_type(value: Any) -> str:
    kinds: list[tuple[type | tuple[type, ...], str]] = [
        (bool, "boolean"),
        ((int, float), "number"),
        (str, "string"),
        (list, "array"),
    ]
    if value is None:
        return "null"
    return next((name for kind, name in kinds if isinstance(value, kind)), "object")


class _Progress:
    """Progress notifications of one tool call (sent only when the caller asked for them, with a
    progress token): one per tool call, tool result and hint, one when the answer starts."""

    def __init__(self, ctx: Any) -> None:
        self.ctx, self.sent, self.answering = ctx, 0, False

    async def report(self, event: object) -> None:
        if isinstance(event, ToolCallEvent):
            text = f"calling {event.tool_call.name}"
        elif isinstance(event, ToolResultEvent):
            text = f"{event.result.name} {'failed' if event.result.is_error else 'returned'}"
        elif isinstance(event, HintEvent):
            text = event.text[:_DESCRIPTION_CHARS]
        elif isinstance(event, TextDeltaEvent) and event.text and not self.answering:
            self.answering, text = True, "answering"
        else:
            return
        self.sent += 1
        await self.ctx.session.report_progress(self.sent, None, text)


class _Guarded:
    """An ASGI app behind bearer auth: the identity of a known token goes in the ASGI scope (where
    :meth:`McpAgentServer._identity` reads it); a wrong token or a malformed ``Authorization``
    header gets 401, always; a request without credentials gets 401 unless ``anonymous`` (then it
    runs as the anonymous user). A class, not a function: a router mounts it as an ASGI
    app (every method), never as a request handler."""

    def __init__(self, app: Any, verifier: IdentityVerifier | None, *, anonymous: bool) -> None:
        self.app, self.verifier, self.anonymous = app, verifier, anonymous

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        answered, who = await verify_credentials(scope, send, self.verifier, SEND_A_TOKEN)
        if answered:
            return
        if who is None:  # no credentials at all; wrong ones were refused above
            if not self.anonymous:
                await refuse_unauthenticated(
                    send, f"the request has no credentials; {SEND_A_TOKEN}"
                )
                return
            who = Identity(None, None)
        await self.app({**scope, SCOPE_KEY: who, "user": _sdk_user(who)}, receive, send)


def _sdk_user(who: Identity) -> Any:
    """``who`` as the SDK's authenticated user: the SDK binds an MCP session (``Mcp-Session-Id``)
    to the user that opened it and answers any other as if the session did not exist."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    owner = json.dumps([who.org_id, who.user_id])
    return AuthenticatedUser(AccessToken(token="", client_id=owner, scopes=[], subject=owner))
