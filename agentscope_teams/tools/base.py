"""The :class:`Tool` record, the :class:`ToolEnv` a tool runs in, and Claude Code name aliases."""

from __future__ import annotations

import contextvars
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import InitVar, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_json

from ..context import RuntimeContext, VarScope
from ..errors import ToolError
from ..model.base import ToolSchema
from ..model.response_parsing import RAW_ARGUMENTS_KEY
from ..sandbox.base import PathMask
from .claude_code import CLAUDE_TOOLS
from .output import ToolOutput

ALIASES: Mapping[str, str] = MappingProxyType(
    {name: known.natives[0] for name, known in CLAUDE_TOOLS.items()}
)
"""Claude Code tool names (as written in specs and rules) -> the main tool of ours for each
(see :mod:`.claude_code`, the table)."""


def resolve_tool_name(name: str) -> str:
    """The built-in name for a Claude Code alias (``"Read"`` -> ``"read_file"``), else ``name``."""
    return ALIASES.get(name, name)


ToolFunc = Callable[..., Awaitable[Any]]
Validator = Callable[[dict[str, Any]], dict[str, Any]]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

_SCHEMAS_MAX = 4096
_schemas: dict[tuple[str, str, int], tuple[dict[str, Any], ToolSchema]] = {}
"""Built tool schemas, bounded (per process)."""

_RESOLVED_MAX = 1024
_resolved: dict[str, Path] = {}


def resolve_dir(path: Path | str) -> Path:
    """``Path(path).resolve()``, remembered for absolute paths to existing directories.

    Workspaces are resolved on every tool call; the cache saves the per-component ``lstat`` calls.
    Only directories that exist are remembered (a missing one could later appear as a symlink);
    one that is replaced by a symlink afterwards keeps its old resolution (bounded cache, per process).
    """
    key = os.fspath(path)
    found = _resolved.get(key)
    if found is not None:
        return found
    resolved = Path(key).resolve()
    if os.path.isabs(key) and resolved.is_dir():
        if len(_resolved) >= _RESOLVED_MAX:
            _resolved.clear()
        _resolved[key] = resolved
    return resolved


@dataclass(frozen=True)
class ToolEnv:
    """Where and for whom a tool runs: the workspace root, the caller's identity and injected services.

    ``workspace`` is resolved (symlinks included) on construction; file tools never leave it. A caller
    that already holds a real path (absolute, no symlink, ``.`` or ``..`` component) passes
    ``resolved=True`` and it is used as given, with no file-system access: the agent does this for
    each session (its resolved root joined with escaped names). The directory need not exist: tools
    that take a ``ToolEnv`` create it when they first run (:meth:`ensure_workspace`). An agent's
    calls put its read-only :class:`~agentscope_teams.agent.AgentView` in ``extras["agent"]``.

    ``read_guard``: given a path relative to the workspace, the refusal (naming the rule) if the
    agent's permission rules deny reading it, else None. The file tools that list or search leave
    out what it refuses (Claude Code applies ``Read`` deny rules to Grep, Glob and LS); the agent
    sets it from its :class:`~agentscope_teams.tools.PermissionEngine` (``read_guard``).

    ``sandbox_mask``: what the same rules (``Read`` and ``Edit`` deny rules) hide from a shell
    command in a contained sandbox or keep read-only there, found when it is called (the ``bash``
    tool calls it as each command starts); the agent sets it from the engine's ``sandbox_mask``.
    """

    workspace: Path
    ctx: RuntimeContext | None = None
    agent_name: str = ""
    extras: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    resolved: InitVar[bool] = False
    read_guard: Callable[[str], str | None] | None = field(default=None, compare=False)
    sandbox_mask: Callable[[], PathMask] | None = field(default=None, compare=False)

    def __post_init__(self, resolved: bool) -> None:
        if not resolved:
            object.__setattr__(self, "workspace", resolve_dir(self.workspace))
        else:
            ws = self.workspace if isinstance(self.workspace, Path) else Path(self.workspace)
            if not ws.is_absolute() or ".." in ws.parts:
                raise ValueError(f"a resolved workspace must be absolute without '..', got {ws}")
            object.__setattr__(self, "workspace", ws)
        object.__setattr__(self, "extras", MappingProxyType(dict(self.extras)))

    def refuse_unreadable(self, shown: str) -> None:
        """A ToolError naming the rule if :attr:`read_guard` refuses ``shown`` (a path relative
        to the workspace): what a file tool that reads or lists it raises."""
        refusal = self.read_guard(shown) if self.read_guard is not None else None
        if refusal is not None:
            raise ToolError(f"{shown} cannot be read: {refusal}; do not retry this call")

    def ensure_workspace(self) -> Path:
        """Create the workspace directory (and its parents) if it does not exist; returns it.

        One ``stat`` when it exists. Called by every tool that takes a ``ToolEnv`` before it runs
        (in the tool's worker thread for sync tools), so a call that runs no such tool touches no
        directory.
        """
        ws = self.workspace
        if not os.path.isdir(ws):
            os.makedirs(ws, exist_ok=True)
        return ws


_current_env: contextvars.ContextVar[ToolEnv | None] = contextvars.ContextVar(
    "agentscope_teams_tool_env", default=None
)


def current_tool_env() -> ToolEnv:
    """The ToolEnv of the running tool call; raises ``LookupError`` outside of one."""
    env = _current_env.get()
    if env is None:
        raise LookupError(
            "no ToolEnv is active: run tools through Toolkit.execute(call, env=...) or inside "
            "`with use_tool_env(ToolEnv(workspace=...))`"
        )
    return env


def get_tool_env() -> ToolEnv | None:
    """The ToolEnv of the running tool call, or None."""
    return _current_env.get()


def use_tool_env(env: ToolEnv) -> VarScope[ToolEnv]:
    """Make ``env`` the current ToolEnv inside the ``with`` block (or the decorated function)."""
    return VarScope(_current_env, env)


@dataclass
class Tool:
    """A callable the model may use: a name, a description, a JSON schema and an async function.

    ``func`` is awaited with the validated arguments as keyword arguments. ``validator`` (set by
    :func:`tool`) validates and coerces them; without one, :meth:`validate` checks the JSON schema's
    required properties, unknown properties (when ``additionalProperties`` is false) and basic types.
    ``primary_argument`` is the argument permission patterns match; by default the first required
    string parameter.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    func: ToolFunc
    read_only: bool = False
    concurrency_safe: bool = False
    requires_confirmation: bool = False
    primary_argument: str | None = None
    #: The call is a question for the user: it always pauses (whatever the mode or rules, except a
    #: deny rule) and the user's answers are its result (``ConfirmResult.answers``).
    asks_user: bool = False
    #: Running the call again with the same arguments leaves what running it once left (a
    #: claim of a task the caller then holds): a reasoning step whose every call is read-only or
    #: idempotent runs its tools before the session is saved, since a crash in between only
    #: makes the model call them again (see :mod:`agentscope_teams.agent.react`).
    idempotent: bool = False
    #: Plan mode lets the call through although the tool is not ``read_only``: the tool itself
    #: refuses, in plan mode, what would change files or state (``agent_spawn`` starts only a
    #: child that runs in plan mode too, :mod:`agentscope_teams.subagents`).
    plan_checked: bool = False
    validator: Validator | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ValueError(
                f"invalid tool name {self.name!r}: use 1-64 letters, digits, '_' or '-'"
            )
        props = self.parameters.get("properties", {})
        if self.primary_argument is None:
            self.primary_argument = _first_required_string(self.parameters)
        elif self.primary_argument not in props:
            raise ValueError(
                f"tool {self.name!r}: primary_argument {self.primary_argument!r} is not a parameter"
            )

    def schema(self) -> ToolSchema:
        """What the model is told about this tool: a frozen model, built once per (name,
        description, parameters object) and shared by copies (``dataclasses.replace(t, func=...)``).

        Change a tool by assigning a new ``parameters`` (or :func:`dataclasses.replace`), not by
        editing the dict in place: an edit in place is not seen by a schema already built.
        """
        key = (self.name, self.description, id(self.parameters))
        found = _schemas.get(key)
        if found is not None and found[0] is self.parameters:
            return found[1]
        built = ToolSchema(name=self.name, description=self.description, parameters=self.parameters)
        if len(_schemas) >= _SCHEMAS_MAX:
            _schemas.clear()
        _schemas[key] = (self.parameters, built)  # keeps ``parameters`` alive: its id stays unique
        return built

    @property
    def argument_names(self) -> list[str]:
        return list(self.parameters.get("properties", {}))

    def validate(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Validated (and coerced) arguments; raises :class:`ToolError` naming every bad argument."""
        if not isinstance(arguments, Mapping):
            raise ToolError(
                f"the arguments of tool {self.name!r} must be a JSON object, "
                f"got {type(arguments).__name__}"
            )
        if RAW_ARGUMENTS_KEY in arguments and RAW_ARGUMENTS_KEY not in self.argument_names:
            raw = str(arguments[RAW_ARGUMENTS_KEY])
            shown = raw if len(raw) <= 200 else raw[:200] + "..."
            raise ToolError(
                f"the arguments of tool {self.name!r} are not valid JSON: {shown!r}. "
                f"Call it again with a JSON object; {self._expected()}"
            )
        if self.validator is not None:
            return self.validator(dict(arguments))
        problems = argument_problems(self.parameters, arguments)
        if problems:
            raise invalid_arguments(self, problems)
        return dict(arguments)

    async def invoke(self, arguments: Mapping[str, Any]) -> str:
        """Validate ``arguments``, await the function and convert its result to text (may raise)."""
        return to_output(await self.func(**self.validate(arguments)))

    def _expected(self) -> str:
        required = set(self.parameters.get("required", []))
        names = [n if n in required else n + "?" for n in self.argument_names]
        return "arguments: " + (", ".join(names) if names else "none") + " (? = optional)"


def invalid_arguments(tool: Tool, problems: list[str]) -> ToolError:
    """The ToolError listing ``problems`` (one per argument) for a call of ``tool``."""
    lines = "\n".join(f"- {p}" for p in problems)
    return ToolError(
        f"invalid arguments for tool {tool.name!r}:\n{lines}\nExpected {tool._expected()}."
    )


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _has_type(value: Any, json_type: str) -> bool:
    if json_type not in _JSON_TYPES:
        return True
    if isinstance(value, bool) and json_type in ("integer", "number"):
        return False
    return isinstance(value, _JSON_TYPES[json_type])


def argument_problems(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[str]:
    """A tool call's arguments against its parameters' JSON schema, shallowly: missing required,
    unknown (if forbidden) and mistyped top-level arguments (nested values are the tool's to check;
    a full validation is ``agent.output.schema_problems``)."""
    props: Mapping[str, Any] = schema.get("properties", {})
    problems = [
        f"{name}: missing required argument"
        for name in schema.get("required", [])
        if name not in arguments
    ]
    for name, value in arguments.items():
        prop = props.get(name)
        if prop is None:
            if schema.get("additionalProperties", True) is False:
                problems.append(f"{name}: unexpected argument")
            continue
        wanted = prop.get("type") if isinstance(prop, Mapping) else None
        types = [wanted] if isinstance(wanted, str) else list(wanted or [])
        if types and not any(_has_type(value, t) for t in types):
            problems.append(
                f"{name}: expected {' or '.join(types)}, got {type(value).__name__} {value!r:.80}"
            )
    return problems


def _first_required_string(schema: Mapping[str, Any]) -> str | None:
    props: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        prop = props.get(name)
        if isinstance(prop, Mapping) and prop.get("type") == "string":
            return str(name)
    return None


def to_output(value: object) -> str:
    """A tool's return value as text: str as-is, None as "", a ``ToolOutput`` rendered, other
    models and containers as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, ToolOutput):
        return value.render()
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return to_json(value, fallback=str).decode()
