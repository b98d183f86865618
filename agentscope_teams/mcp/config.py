"""MCP server configuration in Claude Code's format: ``.mcp.json``, a spec's ``mcpServers``, or code.

A configuration maps server names to servers::

    {"mcpServers": {
        "git":    {"command": "python", "args": ["-m", "mcp_server_git"], "env": {"X": "${X}"}},
        "search": {"type": "http", "url": "https://mcp.example.com/mcp",
                   "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}}}}

A server without ``type`` (or ``"type": "stdio"``) is a command run as a subprocess speaking MCP on
its stdin/stdout; ``"type": "http"`` (also ``"streamable-http"``) is a streamable-HTTP endpoint.
``${VAR}`` and ``${VAR:-default}`` are expanded, as Claude Code does, in ``command``, ``args``,
``env``, ``url`` and ``headers``; an unset variable without a default is an error naming the file,
the server, the field and the variable. A configuration the operator gives (code, ``--mcp-config``)
is expanded when it is read; one a project brings (its ``.mcp.json``, a spec's ``mcpServers``) is
read with ``expand=False`` and expanded by :func:`expand_server` only once the project is trusted
(:mod:`agentscope_teams.trust`), so an untrusted file never gets a variable's value.

A server name becomes part of tool names (``mcp__<server>__<tool>``), so it cannot hold ``__`` or
end with ``_``: every published name then has exactly one server.

``trustAnnotations: true`` (default false) lets the server's tool annotations count: a tool marked
``readOnlyHint`` is then read-only (allowed in plan mode, no confirmation). The MCP specification
calls annotations untrusted hints, so by default every tool of a server is treated as one that
writes and asks.

Secrets never reach a log, a repr or an error: :class:`StdioServer` and :class:`HttpServer` show
the names of environment variables and headers, never their values, and a URL without its
user-info and query; :func:`redact` takes every argument, environment and header value and the
URL's secret parts out of a text.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..errors import ConfigurationError, field_path
from ..text_files import read_text_file

__all__ = [
    "IGNORED_CLIENT_KEYS",
    "HttpServer",
    "ServerConfig",
    "StdioServer",
    "check_server_name",
    "expand_env",
    "expand_server",
    "load_mcp_json",
    "parse_server",
    "parse_servers",
    "redact",
    "safe_url",
]

log = logging.getLogger(__name__)

SERVER_NAME = re.compile(r"[A-Za-z0-9_-]{1,48}")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_HTTP_TYPES = ("http", "streamable-http", "streamableHttp")


class _Server(BaseModel):
    """What both transports share: a frozen, closed configuration, shown by its ``repr`` (which
    names secrets without their values) and identified by its :meth:`fingerprint`."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    #: Whether this server's tool annotations (``readOnlyHint``, ...) are believed.
    trust_annotations: bool = Field(default=False, alias="trustAnnotations")

    def __str__(self) -> str:
        return repr(self)

    def fingerprint(self) -> str:
        """A digest of the whole configuration: two servers share connections only if it is equal."""
        raw = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


class StdioServer(_Server):
    """A server run as a subprocess (one per (org, user), see :mod:`agentscope_teams.mcp.pool`)."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = Field(default_factory=dict)
    cwd: str | None = None

    def __repr__(self) -> str:
        env = ", ".join(sorted(self.env))
        return f"StdioServer(command={self.command!r}, args=<{len(self.args)} args>, env=[{env}])"


class HttpServer(_Server):
    """A streamable-HTTP server (``"type": "http"``)."""

    type: Literal["http"] = "http"
    url: str = Field(min_length=1)
    headers: Mapping[str, str] = Field(default_factory=dict)

    def __repr__(self) -> str:
        headers = ", ".join(sorted(self.headers))
        return f"HttpServer(url={safe_url(self.url)!r}, headers=[{headers}])"


ServerConfig = StdioServer | HttpServer


def safe_url(url: str) -> str:
    """``url`` without user-info, query and fragment (where tokens hide), for messages."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def expand_env(value: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """``value`` with ``${VAR}`` and ``${VAR:-default}`` replaced from ``environ`` (default:
    ``os.environ``); an unset variable without a default raises naming ``where``."""
    env = os.environ if environ is None else environ

    def replace(match: re.Match[str]) -> str:
        name, default = match[1], match[2]
        found = env.get(name)
        if found is not None and (found != "" or default is None):
            return found
        if default is not None:
            return default
        raise ConfigurationError(
            f"{where}: environment variable {name} is not set; set it or write "
            f"${{{name}:-default}} to give a default"
        )

    return _VAR.sub(replace, value)


def check_server_name(name: Any, source: str = "") -> str:
    """``name`` if it can name a server, else a ConfigurationError naming it and ``source``."""
    at = f"{source}: " if source else ""
    if (
        not isinstance(name, str)
        or not SERVER_NAME.fullmatch(name)
        or "__" in name
        or name.endswith("_")
    ):
        raise ConfigurationError(
            f"{at}mcpServers: invalid server name {name!r}; use 1-48 letters, digits, '-' or "
            "'_', without '__' and not ending with '_' (it becomes part of the tool names "
            "mcp__<server>__<tool>, which must name one server)"
        )
    return name


def parse_server(
    name: str,
    raw: Any,
    source: str,
    environ: Mapping[str, str] | None = None,
    *,
    expand: bool = True,
) -> StdioServer | HttpServer:
    """One server entry of ``source`` (a file name or ``"mcp_servers"``; ``""`` when the caller
    says where the entry is, as a spec file does), checked, and expanded unless ``expand`` is
    False (then ``${VAR}`` stays as written: see :func:`expand_server`)."""
    at = f"{source}: " if source else ""
    where = f"{at}mcpServers.{name}"
    check_server_name(name, source)
    if isinstance(raw, StdioServer | HttpServer):
        return raw
    if not isinstance(raw, Mapping):
        raise ConfigurationError(
            f"{where}: a server must be a mapping with `command` (stdio) or `type: http` and "
            f"`url`, got {type(raw).__name__}"
        )
    data = _without_client_keys(dict(raw), where)
    kind = data.get("type", "stdio")
    if kind == "sse":
        raise ConfigurationError(
            f"{where}.type: the deprecated SSE transport is not supported; use the server's "
            'streamable-HTTP endpoint with "type": "http"'
        )
    if kind in _HTTP_TYPES:
        data["type"] = "http"
        model: type[StdioServer | HttpServer] = HttpServer
    elif kind == "stdio":
        model = StdioServer
    else:
        raise ConfigurationError(
            f'{where}.type: unknown transport {kind!r}; use "stdio" (the default) or "http"'
        )
    if expand:
        _expand_fields(data, where, environ)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = field_path(first)
        reason = (
            f"unknown key (a {model.__name__} takes {', '.join(model.model_fields)})"
            if first["type"] == "extra_forbidden"
            else first["msg"]
        )
        raise ConfigurationError(f"{where}.{field}: {reason}") from None


#: Keys other MCP clients write in a server entry that change nothing here when left out: a
#: note for people, and auto-approval lists (without them every call goes through the permission
#: rules as any other: we ask more, never less). Left out with a warning. A key whose loss would
#: widen what the server may do (``disabledTools``) stays an error.
IGNORED_CLIENT_KEYS = ("description", "autoApprove", "alwaysAllow")


def _without_client_keys(data: dict[str, Any], where: str) -> dict[str, Any]:
    """``data`` without :data:`IGNORED_CLIENT_KEYS` (a warning names them) and ``disabled:
    false``; ``disabled: true`` here (a server not left out by :func:`parse_servers`, e.g. a
    spec file's inline one) is an error saying to leave the server out."""
    dropped = [k for k in IGNORED_CLIENT_KEYS if k in data]
    if dropped:
        log.warning("%s: %s ignored (other MCP clients' keys; calls go through the permission "
                    "rules)", where, ", ".join(dropped))  # fmt: skip
    disabled = data.get("disabled", False)
    if not isinstance(disabled, bool):
        raise ConfigurationError(f"{where}.disabled: must be true or false")
    if disabled:
        raise ConfigurationError(f"{where}.disabled: a disabled server here: leave it out instead")
    if "disabledTools" in data:
        raise ConfigurationError(
            f"{where}.disabledTools: not supported (leaving it out would offer the tools it "
            "hides); deny them with permission rules such as 'mcp__<server>__<tool>' instead"
        )
    return {k: v for k, v in data.items() if k not in (*IGNORED_CLIENT_KEYS, "disabled")}


def _expand_fields(data: dict[str, Any], where: str, environ: Mapping[str, str] | None) -> None:
    """Expand ``${VAR}`` in the string fields a server reads (values of env and headers only)."""
    for field in ("command", "url", "cwd"):
        if isinstance(data.get(field), str):
            data[field] = expand_env(data[field], f"{where}.{field}", environ)
    args = data.get("args")
    if isinstance(args, list | tuple):
        data["args"] = [
            expand_env(a, f"{where}.args[{i}]", environ) if isinstance(a, str) else a
            for i, a in enumerate(args)
        ]
    for field in ("env", "headers"):
        table = data.get(field)
        if isinstance(table, Mapping):
            data[field] = {
                k: expand_env(v, f"{where}.{field}.{k}", environ) if isinstance(v, str) else v
                for k, v in table.items()
            }


def expand_server(
    server: StdioServer | HttpServer, where: str, environ: Mapping[str, str] | None = None
) -> StdioServer | HttpServer:
    """``server`` (read with ``expand=False``) with ``${VAR}`` expanded; ``where`` names it in
    the error about an unset variable."""
    data = server.model_dump(by_alias=True)
    _expand_fields(data, where, environ)
    return type(server).model_validate(data)


def redact(server: StdioServer | HttpServer, text: str) -> str:
    """``text`` with what of ``server`` may be secret replaced by a label: each argument
    (``<args[1]>``), environment and header value (``<env TOKEN>``), the URL's user-info and query
    (the URL shown as :func:`safe_url` keeps it). Values shorter than 6 characters are kept (they
    are too short to be a credential and would garble the text)."""
    found: list[tuple[str, str]] = []
    if isinstance(server, HttpServer):
        text = text.replace(server.url, safe_url(server.url))
        parts = urlsplit(server.url)
        found += [(parts.query, "<url query>"), (parts.password or "", "<url password>")]
        found += [(v, f"<header {k}>") for k, v in server.headers.items()]
    else:
        found += [(v, f"<args[{i}]>") for i, v in enumerate(server.args)]
        found += [(v, f"<env {k}>") for k, v in server.env.items()]
    for value, label in sorted(found, key=lambda item: -len(item[0])):
        if len(value) >= 6:
            text = text.replace(value, label)
    return text


def parse_servers(
    raw: Any, source: str, environ: Mapping[str, str] | None = None, *, expand: bool = True
) -> dict[str, StdioServer | HttpServer]:
    """Servers by name from a mapping: ``{"mcpServers": {...}}`` (a ``.mcp.json``) or the inner
    ``{name: server}`` mapping."""
    if isinstance(raw, Mapping) and "mcpServers" in raw:
        extra = sorted(set(raw) - {"mcpServers"})
        if extra:
            raise ConfigurationError(
                f"{source}: unknown top-level keys {extra}; an MCP configuration holds only "
                "`mcpServers`"
            )
        raw = raw["mcpServers"]
    if not isinstance(raw, Mapping):
        raise ConfigurationError(
            f"{source}: mcpServers must be a mapping of server names to servers, "
            f"got {type(raw).__name__}"
        )
    return {
        name: parse_server(name, value, source, environ, expand=expand)
        for name, value in raw.items()
        if not _disabled(value)
    }


def _disabled(value: Any) -> bool:
    """Whether a server entry says ``"disabled": true`` (as other MCP clients write): it is left
    out, as they leave it out."""
    return isinstance(value, Mapping) and value.get("disabled") is True


def load_mcp_json(
    path: Path | str, environ: Mapping[str, str] | None = None, *, expand: bool = True
) -> dict[str, StdioServer | HttpServer]:
    """The servers of a ``.mcp.json`` file (or of the ``.mcp.json`` in a directory); with
    ``expand=False``, ``${VAR}`` stays as written."""
    file = Path(path)
    if file.is_dir():
        file = file / ".mcp.json"
    text = read_text_file(file, "the MCP configuration")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"{file}:{exc.lineno}: invalid JSON in the MCP configuration: {exc.msg}"
        ) from None
    return parse_servers(data, str(file), environ, expand=expand)
