"""The ``specs check`` report: load a directory of specs leniently and show what was found.

:func:`check_specs` is what ``agentscope-teams specs check DIR`` runs; :func:`render_spec_check`
prints an already loaded :class:`SpecLoadResult`. Both return the exit code: 0 when every file
loaded (warnings allowed), 1 when any file has an error. With ``strict_yaml``
(``specs check --strict``) a frontmatter that only loads leniently (an unquoted value holding ': ')
is an error, as it is for strict YAML readers, and so is whatever loads but would not behave as
written (:mod:`.strict`: a tool with no counterpart, an unknown model, an MCP server not configured,
a Claude Code key not acted on).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from ..errors import SpecError
from .spec import SpecLoadResult, SubagentSpec, load_specs
from .strict import strict_problems

_DESCRIPTION_WIDTH = 80


def _short(text: str, width: int = _DESCRIPTION_WIDTH) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first if len(first) <= width else first[: width - 1].rstrip() + "…"


def _tools_cell(spec: SubagentSpec) -> Text:
    if spec.tools is None:
        cell = Text("inherit", style="dim")
    elif not spec.tools:
        cell = Text("none", style="dim")
    else:
        cell = Text(", ".join(spec.tools))
    if spec.unavailable_tools:
        cell.append(f"\nignored: {', '.join(spec.unavailable_tools)}", style="yellow")
    return cell


def _behaviour(spec: SubagentSpec) -> list[str]:
    """The Claude Code keys a spec sets, as they will act."""
    shown = []
    if spec.permission_mode:
        shown.append(f"mode {spec.permission_mode}")
    if spec.disallowed_tools:
        shown.append(f"disallowed {', '.join(spec.disallowed_tools)}")
    if spec.max_turns is not None:
        shown.append(f"maxTurns {spec.max_turns}")
    if spec.background:
        shown.append("background")
    if spec.effort:
        shown.append(f"effort {spec.effort}")
    if spec.skills:
        shown.append(f"skills {', '.join(spec.skills)}")
    if spec.initial_prompt:
        shown.append("initialPrompt")
    return shown


def _workspace_cell(spec: SubagentSpec) -> Text:
    cell = Text(spec.workspace.mode.value)
    if spec.workspace.path is not None:
        cell.append(f"\n{spec.workspace.path}", style="dim")
    return cell


def spec_table(result: SpecLoadResult) -> Table:
    """A table with one row per loaded spec."""
    table = Table(title="Subagent specs", title_justify="left", show_lines=True)
    for column in ("name", "description", "model", "tools", "workspace", "warnings"):
        table.add_column(column, overflow="fold")
    for name in sorted(result.specs):
        spec = result.specs[name]
        steps = f"\nsteps {spec.steps}" if spec.steps is not None else ""
        steps += "".join(f"\n{item}" for item in _behaviour(spec))
        table.add_row(
            Text(name, style="bold"),
            Text(_short(spec.description)),
            Text(spec.model or "inherit", style="" if spec.model else "dim").append(steps),
            _tools_cell(spec),
            _workspace_cell(spec),
            Text("\n".join(spec.warnings), style="yellow"),
        )
    return table


def offering_notes(specs: Mapping[str, SubagentSpec]) -> list[str]:
    """Tools the specs list that this machine would not offer, and what to install or configure
    (``bash`` without a working bubblewrap, ``web_search`` without a provider, ...)."""
    from ..sandbox import default_sandbox
    from ..tools.web import unavailable_web_tools

    wanted = {t for spec in specs.values() for t in spec.tools or ()}
    missing = {k: v for k, v in unavailable_web_tools().items() if k in wanted}
    if "bash" in wanted:
        found, why = default_sandbox()
        if found is None:
            missing["bash"] = (why or "no sandbox") + " (or run with --sandbox unsafe-host)"
    notes = []
    for tool, how in sorted(missing.items()):
        users = sorted(n for n, spec in specs.items() if tool in (spec.tools or ()))
        notes.append(f"{tool} ({', '.join(users)}) is not offered here: {how}")
    return notes


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def render_spec_check(result: SpecLoadResult, console: Console | None = None) -> int:
    """Print the specs table, then every error; return 0 without errors, else 1."""
    console = console or Console()
    parts: list[Table | Text] = []
    if result.specs:
        parts.append(spec_table(result))
    notes = offering_notes(result.specs)
    if notes:
        parts.append(Text("Not offered here\n" + "\n".join(notes), style="yellow"))
    if result.errors:
        errors = Text("Errors\n", style="bold red")
        errors.append("\n".join(str(error) for error in result.errors), style="red")
        parts.append(errors)
    summary = (
        f"{_plural(len(result.specs), 'spec')} loaded, "
        f"{_plural(len(result.warnings), 'warning')}, {_plural(len(result.errors), 'error')}"
    )
    parts.append(Text(summary, style="bold red" if result.errors else "bold green"))
    console.print(Group(*parts))
    return 1 if result.errors else 0


def check_specs(
    directory: Path | str,
    *,
    model_aliases: Mapping[str, str] | None = None,
    console: Console | None = None,
    strict_yaml: bool = False,
    mcp_servers: Collection[str] | None = None,
) -> int:
    """Load ``directory`` leniently, print the report and return the exit code (0 ok, 1 errors).

    ``mcp_servers``: the configured MCP server names, checked against the specs' ``mcpServers``
    with ``strict_yaml`` (None: not checked)."""
    console = console or Console()
    try:
        result = load_specs(
            directory, strict=False, model_aliases=model_aliases, strict_yaml=strict_yaml
        )
    except SpecError as exc:  # the directory itself is missing or not a directory
        console.print(Text(str(exc), style="bold red"))
        return 1
    if not result.specs and not result.errors:
        console.print(Text(f"no *.md spec files in {directory}", style="yellow"))
        return 0
    if strict_yaml:
        result.errors += strict_problems(result, mcp_servers)
    return render_spec_check(result, console)
