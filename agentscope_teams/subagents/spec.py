"""Subagent spec files: Markdown with YAML frontmatter, loaded into :class:`SubagentSpec`.

The body is the subagent's system prompt::

    ---
    description: Code-review specialist. Use when the user wants a PR reviewed.
    workspace:
      mode: isolated          # isolated (default) | shared
      path: ./defs/reviewer   # optional, relative to this file
    model: openai:gpt-4o-mini # optional: inherit (default); sonnet/opus/haiku via model_aliases
    steps: 8                  # optional, alias max_iters
    tools: [read_file, grep_files]  # or "Read, Grep"; absent: inherit the parent's tools
    mcpServers: [github]      # optional: configured MCP servers by name, or inline definitions
    context: fresh            # fresh (default) | fork
    memory: project           # optional: user | project | local, a persistent memory (.memory)
    isolation: worktree       # optional: each run in its own git worktree (.worktree)
    output:                   # optional: a JSON schema; agent_spawn then returns validated data
      type: object
      properties: {verdict: {enum: [approve, reject]}}
      required: [verdict]
    ---
    You are a subagent focused on code review.

Files written for Claude Code (``.claude/agents/*.md``) load unchanged: its tool names are mapped
(``Read`` -> ``read_file``, ...), MCP tools (``mcp__<server>__<tool>``) are served by the agent's MCP servers (see
:mod:`agentscope_teams.mcp`), tools this runtime does not offer (``Bash``) are listed in
:attr:`SubagentSpec.unavailable_tools`, and unknown keys (``color``, ...) are kept in
:attr:`SubagentSpec.extra`, each with a warning. Every problem is a :class:`SpecError` naming the file and
the line in the file; :func:`load_specs` collects the problems of every file before raising
:class:`SpecErrors`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from ..a2a.config import RemoteAgentConfig
from ..agent.output import OutputType
from ..errors import SpecError, SpecErrors
from ..mcp.config import HttpServer, StdioServer
from ..state import PermissionMode
from ._fields import (
    CLAUDE_CODE_TOOLS,
    CLAUDE_MODEL_ALIASES,
    NATIVE_TOOLS,
    SPEC_KEYS,
    BadOutputSchema,
    check_choice,
    check_description,
    check_disallowed,
    check_effort,
    check_hooks,
    check_max_turns,
    check_mcp_servers,
    check_name,
    check_output,
    check_path,
    check_permission_mode,
    check_skills,
    check_steps,
    describe,
    error_reason,
    line_for,
    normalize_input,
    normalize_tools,
    resolve_model,
    select_disallowed,
    split_tools,
)
from ._frontmatter import draft_spec
from .memory import MemoryScope

__all__ = [
    "CLAUDE_CODE_TOOLS",
    "CLAUDE_MODEL_ALIASES",
    "NATIVE_TOOLS",
    "SPEC_KEYS",
    "ContextMode",
    "IsolationMode",
    "MemoryScope",
    "SpecErrors",
    "SpecLoadResult",
    "SpecWarning",
    "SubagentSpec",
    "WorkspaceConfig",
    "WorkspaceMode",
    "load_specs",
    "normalize_tools",
    "resolve_model",
    "split_tools",
]


class WorkspaceMode(StrEnum):
    """Where a subagent run works: its own directory (``isolated``) or the parent's (``shared``)."""

    ISOLATED = "isolated"
    SHARED = "shared"


class IsolationMode(StrEnum):
    """``isolation: worktree``: each run works in its own git worktree (see :mod:`.worktree`)."""

    WORKTREE = "worktree"


class ContextMode(StrEnum):
    """How a child starts: with an empty context (``fresh``) or a snapshot of the parent's (``fork``)."""

    FRESH = "fresh"
    FORK = "fork"


# Field checks of the models below (``BeforeValidator``): the checks themselves are in ._fields.
def _workspace_mode(value: Any) -> Any:
    return check_choice(value, WorkspaceMode, "workspace.mode")


def _context_mode(value: Any) -> Any:
    return check_choice(value, ContextMode, "context")


def _memory_scope(value: Any) -> Any:
    return None if value is None else check_choice(value, MemoryScope, "memory")


def _isolation(value: Any) -> Any:
    return None if value is None else check_choice(value, IsolationMode, "isolation")


def _model_name(value: Any) -> Any:
    return resolve_model(value, None)[0]


def _strip(value: Any) -> Any:
    return value.strip() if isinstance(value, str) else value


class WorkspaceConfig(BaseModel):
    """The ``workspace:`` block of a spec."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Annotated[WorkspaceMode, BeforeValidator(_workspace_mode)] = WorkspaceMode.ISOLATED
    path: Annotated[Path | None, BeforeValidator(check_path)] = None


def _workspace_input(value: Any) -> Any:
    """``workspace:`` as a mapping: ``workspace: shared`` is short for ``{mode: shared}``."""
    if isinstance(value, str):
        return {"mode": value}
    if value is None:
        return {}
    if isinstance(value, Mapping | WorkspaceConfig):
        return value
    raise ValueError(
        "workspace must be a mapping with `mode` (isolated or shared) and an optional `path`, "
        f"got {describe(value)}"
    )


class SubagentSpec(BaseModel):
    """A subagent definition: from a spec file (:meth:`from_file`) or built in code.

    Built in code, it accepts what a file accepts (``tools="Read, Grep"``, ``max_iters=5``,
    ``model="sonnet"`` with ``model_validate(..., context={"model_aliases": ...})``) except unknown
    keys, which go in ``extra`` explicitly.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: Annotated[str, BeforeValidator(check_name)]
    description: Annotated[str, BeforeValidator(check_description)]
    system_prompt: Annotated[str, BeforeValidator(_strip)] = ""
    model: Annotated[str | None, BeforeValidator(_model_name)] = None
    steps: Annotated[int | None, BeforeValidator(check_steps)] = None
    tools: Annotated[list[str] | None, BeforeValidator(split_tools)] = None
    unavailable_tools: list[str] = Field(default_factory=list)
    #: The agents it may spawn, from ``Agent(a, b)`` in ``tools:``; None: any (when it may spawn).
    allowed_agents: list[str] | None = None
    #: ``tools:`` entries written with a rule (``Bash(git diff:*)``): that tool may only make the
    #: calls these rules allow.
    tool_rules: list[str] = Field(default_factory=list)
    context: Annotated[ContextMode, BeforeValidator(_context_mode)] = ContextMode.FRESH
    mcp_servers: Annotated[
        dict[str, StdioServer | HttpServer | None], BeforeValidator(check_mcp_servers)
    ] = Field(default_factory=dict, alias="mcpServers")
    workspace: Annotated[WorkspaceConfig, BeforeValidator(_workspace_input)] = Field(
        default_factory=WorkspaceConfig
    )
    #: Tools it must not have (``disallowedTools``): names removed after ``tools:``; entries with a
    #: rule (``Bash(rm:*)``) deny the calls they match. Kept as written.
    disallowed_tools: Annotated[list[str], BeforeValidator(check_disallowed)] = Field(
        default_factory=list, alias="disallowedTools"
    )
    #: Its permission mode (``permissionMode``; Claude Code's names are read); None: the parent's.
    permission_mode: Annotated[PermissionMode | None, BeforeValidator(check_permission_mode)] = (
        Field(default=None, alias="permissionMode")
    )
    #: At most this many model turns (``maxTurns``); with ``steps`` the smaller one applies.
    max_turns: Annotated[int | None, BeforeValidator(check_max_turns)] = Field(
        default=None, alias="maxTurns"
    )
    #: The budget of each run of this spec (``maxTokens``: input + output tokens; ``maxBudgetUsd``:
    #: US dollars), enforced across processes by :mod:`agentscope_teams.usage`. Strict: ``true``
    #: or ``"9"`` is an error, not a budget of 1 or 9.
    max_tokens: int | None = Field(default=None, ge=1, strict=True, alias="maxTokens")
    max_budget_usd: float | None = Field(default=None, gt=0, strict=True, alias="maxBudgetUsd")
    #: Always spawned in the background (``agent_spawn`` returns at once).
    background: bool = False
    #: Reasoning effort for models that have the setting (``low`` ... ``max``); ignored otherwise.
    effort: Annotated[str | None, BeforeValidator(check_effort)] = None
    #: Sent before the task, as the start of the child's first message (``initialPrompt``).
    initial_prompt: str | None = Field(default=None, alias="initialPrompt")
    #: The colour the dashboard and CLI show it in.
    color: str | None = None
    #: Its persistent memory (``user``, ``project`` or ``local``; see :mod:`.memory`); None: none.
    memory: Annotated[MemoryScope | None, BeforeValidator(_memory_scope)] = None
    #: ``worktree``: each run works in a new git worktree of the parent's repository (see
    #: :mod:`.worktree`); None: the ``workspace`` setting decides.
    isolation: Annotated[IsolationMode | None, BeforeValidator(_isolation)] = None
    #: Hooks active while it runs, in Claude Code's shape (``{Event: [{matcher, hooks}]}``);
    #: ``Stop`` means ``SubagentStop``. They run only if its project is trusted.
    hooks: Annotated[dict[str, Any], BeforeValidator(check_hooks)] = Field(default_factory=dict)
    #: Skills preloaded whole into its system prompt (names of the agent's skills).
    skills: Annotated[list[str], BeforeValidator(check_skills)] = Field(default_factory=list)
    #: A JSON schema the run's answer must match (``output:`` in the frontmatter).
    output: Annotated[dict[str, Any] | None, BeforeValidator(check_output)] = None
    #: The same as a Python type (a pydantic model, ...), for specs built in code; the run's
    #: result data is then validated by it. Not serialized.
    output_type: Any = Field(default=None, exclude=True)
    #: A remote A2A agent that runs as this subagent (``a2a: {url, headers, ...}``; see
    #: ``docs/a2a.md``): its runs send their turns there instead of to a model.
    a2a: RemoteAgentConfig | None = None
    extra: dict[str, Any] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    source: Path | None = None

    @model_validator(mode="before")
    @classmethod
    def _normalize(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, Mapping):
            return data
        if data.get("a2a") is not None and data.get("tools") is None:
            data = {**data, "tools": []}  # a remote agent has its own tools, none of ours
        return normalize_input(data, (info.context or {}).get("model_aliases"))

    @property
    def removed_tools(self) -> list[str]:
        """Our tools ``disallowedTools`` removes."""
        return select_disallowed(self.disallowed_tools)[0]

    @property
    def deny_rules(self) -> list[str]:
        """The ``disallowedTools`` entries with a rule: calls they match are denied."""
        return select_disallowed(self.disallowed_tools)[1]

    @property
    def unknown_disallowed(self) -> list[str]:
        """The ``disallowedTools`` names that match no tool (they remove nothing)."""
        return select_disallowed(self.disallowed_tools)[2]

    @property
    def turn_limit(self) -> int | None:
        """The most model turns a run may take: the smaller of ``steps`` and ``maxTurns``."""
        given = [n for n in (self.steps, self.max_turns) if n is not None]
        return min(given) if given else None

    @property
    def may_spawn(self) -> bool:
        """Whether it gets the ``agent_*`` tools: no ``tools:`` list, or one naming ``Agent``/``Task``
        (or ``agent_spawn``); Claude Code's ``tools:`` is an allowlist for spawning too."""
        allowed = self.tools is None or "agent_spawn" in self.tools
        return allowed and "agent_spawn" not in self.removed_tools

    @model_validator(mode="after")
    def _remote_is_plain(self) -> SubagentSpec:
        if self.a2a is not None and (self.output is not None or self.output_type is not None):
            raise ValueError(
                "a remote agent (a2a:) answers with text: remove output/output_type, or ask it "
                "for JSON in the task"
            )
        return self

    @model_validator(mode="after")
    def _one_output(self) -> SubagentSpec:
        if self.output is not None and self.output_type is not None:
            raise ValueError("give output (a JSON schema) or output_type (a type), not both")
        if self.output_type is not None:
            OutputType.of(self.output_type)  # a type without a JSON schema fails here
        return self

    def output_spec(self) -> OutputType | None:
        """What a run of this spec returns (None: text)."""
        if self.output_type is not None:
            return OutputType.of(self.output_type)
        if self.output is not None:
            return OutputType.from_schema(self.output, f"{self.name} output")
        return None

    @classmethod
    def from_file(
        cls,
        path: Path | str,
        *,
        model_aliases: Mapping[str, str] | None = None,
        strict_yaml: bool = False,
    ) -> SubagentSpec:
        """Load one spec file. Raises :class:`SpecError` (:class:`SpecErrors` for several problems).

        A frontmatter that is not YAML only because a value holds an unquoted ': ' loads with a
        warning ("loaded leniently"); with ``strict_yaml`` it is an error.
        """
        parsed = _parse_spec_file(Path(path), model_aliases, strict_yaml)
        if parsed.errors:
            raise parsed.errors[0] if len(parsed.errors) == 1 else SpecErrors(parsed.errors)
        assert parsed.spec is not None
        return parsed.spec


@dataclass(frozen=True)
class SpecWarning:
    """Something a spec does that works but is probably not what its author meant."""

    file: Path | None
    line: int | None
    message: str

    def __str__(self) -> str:
        where = str(self.file) if self.file is not None else "<spec>"
        return f"{where}:{self.line}: {self.message}" if self.line else f"{where}: {self.message}"


@dataclass
class SpecLoadResult:
    """What :func:`load_specs` found: the valid specs by name, every error and every warning."""

    specs: dict[str, SubagentSpec] = field(default_factory=dict)
    errors: list[SpecError] = field(default_factory=list)
    warnings: list[SpecWarning] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def load_specs(
    directory: Path | str,
    *,
    strict: bool = True,
    model_aliases: Mapping[str, str] | None = None,
    strict_yaml: bool = False,
) -> SpecLoadResult:
    """Load every ``*.md`` spec in ``directory``, in file-name order.

    A folder named ``agents`` (a Claude Code project's ``.claude/agents``, a plugin's ``agents/``)
    is read as Claude Code reads it: its subfolders too (not hidden ones), and a file there with
    no frontmatter at all (a README) is not an agent: skipped with a warning. Any other folder is
    read at its top level only, and every ``*.md`` in it must be a spec.

    With ``strict`` (the default) any problem in any file raises one :class:`SpecErrors` listing
    them all; with ``strict=False`` the valid specs load and the problems are returned in
    ``errors``. Names are unique: the second file using a name is an error naming both files.
    ``strict_yaml`` refuses what :meth:`SubagentSpec.from_file` loads leniently.
    """
    root = Path(directory)
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise SpecError(
            root, None, f"spec directory {what}; pass the folder holding the *.md specs"
        )
    result = SpecLoadResult()
    origin: dict[str, str] = {}
    claude_folder = _claude_style(root)
    for path in spec_files(root):
        if claude_folder and not _has_frontmatter(path):
            result.warnings.append(SpecWarning(path, 1, NOT_AN_AGENT))
            continue
        parsed = _parse_spec_file(path, model_aliases, strict_yaml)
        result.errors.extend(parsed.errors)
        result.warnings.extend(parsed.warnings)
        spec = parsed.spec
        if spec is None:
            continue
        if spec.name in result.specs:
            result.errors.append(
                SpecError(
                    path,
                    parsed.name_line,
                    f"duplicate subagent name {spec.name!r}: {origin[spec.name]} already uses it; "
                    "rename one of the two (set `name:` or rename the file)",
                )
            )
            continue
        result.specs[spec.name] = spec
        origin[spec.name] = f"{path}:{parsed.name_line}"
    if strict and result.errors:
        raise SpecErrors(result.errors, root)
    return result


NOT_AN_AGENT = (
    "not an agent file (no frontmatter), skipped as Claude Code skips it; an agent file starts "
    "with a `---` line, then `name:` and `description:`, then a closing `---` line"
)


def spec_files(root: Path) -> list[Path]:
    """The ``*.md`` files :func:`load_specs` reads in ``root``: at any depth in a folder named
    ``agents`` (hidden files and folders left out), else at its top level; in path order."""
    pattern = "**/*.md" if _claude_style(root) else "*.md"
    found = []
    for path in root.glob(pattern):
        hidden = any(part.startswith(".") for part in path.relative_to(root).parts)
        if path.is_file() and not hidden:
            found.append(path)
    return sorted(found)


def _claude_style(root: Path) -> bool:
    """Whether ``root`` is read as Claude Code reads its agents folders (a folder named
    ``agents``): subfolders included, files without frontmatter skipped."""
    return root.name == "agents"


def _has_frontmatter(path: Path) -> bool:
    """Whether the file's first non-blank line is ``---`` (unreadable files count as having one,
    so that their error is reported)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.strip():
                    return line.strip().removeprefix("\ufeff") == "---"
    except OSError:
        return True
    return False


# -- reading one file ------------------------------------------------------------------------------


@dataclass
class _Parsed:
    spec: SubagentSpec | None = None
    errors: list[SpecError] = field(default_factory=list)
    warnings: list[SpecWarning] = field(default_factory=list)
    name_line: int = 1


def _parse_spec_file(path: Path, aliases: Mapping[str, str] | None, strict_yaml: bool) -> _Parsed:
    try:
        draft = draft_spec(path, aliases, strict_yaml=strict_yaml)
    except SpecError as exc:
        return _Parsed(errors=[exc])
    warnings = [SpecWarning(path, line, message) for line, message in draft.notes]
    parsed = _Parsed(errors=draft.errors, warnings=warnings, name_line=draft.name_line)
    if draft.data is not None:
        try:
            parsed.spec = SubagentSpec.model_validate(
                draft.data, context={"model_aliases": aliases}
            )
        except ValidationError as exc:
            for error in exc.errors():
                loc = [str(part) for part in error["loc"]]
                problem = (error.get("ctx") or {}).get("error")
                if isinstance(problem, BadOutputSchema):
                    loc += problem.path  # the line of the key inside the schema
                if not loc or loc[0] not in draft.failed:
                    line = line_for(loc, draft.lines, draft.start)
                    parsed.errors.append(
                        SpecError(path, line, error_reason(error, draft.alias_used))
                    )
    parsed.errors.sort(key=lambda error: error.line or 0)
    if parsed.errors:
        parsed.spec = None
    return parsed
