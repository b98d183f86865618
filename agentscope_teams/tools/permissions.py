"""The permission engine: ``allow``, ``deny`` or ``ask`` for each tool call.

Evaluation order, first hit wins:

1. a matching ``deny`` rule -> deny; for a shell command, also a ``Read`` or ``Edit`` deny rule
   denying a file one of its recognized file commands reads or changes (see below);
2. a tool that ``asks_user`` (a question for the user) -> ask, in every mode but ``dont_ask``;
3. plan mode and a tool that is not ``read_only`` -> deny (plan mode is read-only, whatever the
   allow rules say: a rule remembered earlier must not let an agent write while it plans), unless
   it is ``plan_checked`` (it refuses in plan mode by itself what would change anything:
   ``agent_spawn`` or ``spawnMember`` of a child that would not run in plan mode too);
4. a matching ``ask`` rule -> ask;
5. a matching ``allow`` rule -> allow;
6. the mode's default: ``bypass`` -> allow; ``plan`` -> ask if the tool ``requires_confirmation``
   (``exit_plan_mode``: the user approves the plan), else allow (only read-only tools get here);
   ``dont_ask`` -> allow what ``default`` allows without asking, deny the rest;
   ``accept_edits`` -> allow read-only tools and ``write_file`` / ``edit_file``, other tools as in
   ``default``; ``default`` -> ask if the tool ``requires_confirmation``, else allow.

In ``dont_ask`` mode nothing ever asks: every "ask" above (steps 2, 4 and 6) becomes "deny", so an
agent with no user (a background subagent, a team member) never waits on a prompt. An engine made
with ``unattended=`` (a team member's) refuses every "ask" in any mode the same way, with that
reason (:data:`DONT_ASK` is dontAsk mode's), and lists the refused tools in ``refused``. A
PreToolUse hook's "ask" is refused the same way (:meth:`PermissionEngine.never_ask`).

Claude Code's mode names (``acceptEdits``, ``bypassPermissions``, ``dontAsk``) are read by
:func:`resolve_mode`.

The rules are the engine's configured rules followed by ``context.rules`` (accepted during HITL).
The mode is ``context.mode`` (the session's) unless that is ``"default"`` and the session did not
choose it (``context.mode_chosen``), then the engine's mode.

A rule names a tool (Claude Code aliases resolved, globs like ``"*"`` allowed, ``mcp__<server>``
for every tool of an MCP server; as in Claude Code, a ``Read`` rule also names the tools that
read files, :data:`READING_TOOLS`, and an ``Edit`` rule every tool that edits them,
``EDIT_TOOLS``) and optionally a
pattern, matched with :func:`fnmatch.fnmatchcase` (path patterns: below) against ``rule.argument`` or
the tool's ``primary_argument`` (its schema default when the call omits it). Path arguments are
normalized first (``./a``, ``src/../a`` and absolute paths inside the workspace become ``a``; with a
workspace, symlinks are resolved too); a pattern written ``//abs/path`` or ``~/path`` (Claude
Code's absolute and home-relative spellings) is matched against the absolute path. Other path
patterns read as gitignore reads them, relative to the workspace, as Claude Code documents: one
without a slash (``.env``, ``*.pem``, ``secrets/``) names that name at any depth (``app/.env``
too); ``./.env`` is ``.env`` (Claude Code strips the ``./``); ``/.env`` and one with a slash
inside (``config/.env``) are anchored to the workspace (``/`` is Claude Code's project root). A
relative pattern allows nothing outside the workspace; in an allow rule ``*`` and ``?`` stay in
one directory as gitignore reads them (:func:`_pathname_glob`), in a deny or ask rule ``*`` also
spans ``/`` (broader). A deny or ask rule naming a directory
(``Read(secrets)``, ``Read(secrets/)``) covers what is under it, as gitignore reads it. ``deny`` and ``ask`` rules match if the raw or any normalized
form matches; ``allow`` rules only on the canonical form (the file really touched). A ``domain:host``
pattern (``WebFetch(domain:example.com)``) matches a call whose URL's host is that host or one of
its subdomains (:func:`~.web.urls.web_rule_matches`); remembering a call with a URL argument
stores such a domain rule.

Shell tools (:data:`COMMAND_TOOLS`: ``bash``, Claude Code's ``Bash``) match their ``command`` with
Claude Code's Bash rules instead (:mod:`.command_rules`): ``Bash(git diff:*)`` a prefix at a word
boundary, ``Bash(npm run test)`` exact, ``*`` a wildcard. A compound command (``;``, ``&&``,
``||``, ``|``, ``&``, newlines, ``$(...)``, backticks, ``<(...)``, output redirected into a file)
is allowed by rules only if each of its simple commands is allowed by one of them; a deny or ask
rule applies if it matches any of them, or a command a wrapper among them runs (``timeout 5 git
push``, ``bash -c '...'``; :func:`~.command_rules.commands_run`). A command that cannot be parsed
with certainty, or whose wrapped command cannot be determined, is allowed by no pattern rule, and
asks (at step 2b, after plan mode) when a deny rule with a pattern exists for the tool, since that
rule might apply; so does a command with a word only known when the shell runs (``git $X``, ``git
{push,x}``, ``xargs git``) where that word could complete a deny or ask rule's pattern. A path to a
program (``/usr/bin/git push``) is matched by deny and ask rules by the program's name too. Bare
``Bash`` (or ``Bash(*)``) names every command. As in Claude Code, ``Read`` and ``Edit`` deny rules
also deny a shell command whose recognized file commands read a path ``read_file`` would be
denied (``cat .env``, ``wc -l < .env``) or change one an editing tool would be denied (``echo x >
docs/a.md``, ``sed -i ... docs/a.md``: :mod:`.file_commands`) (step 1); what a program opens
itself (``python3 -c "open('.env')"``) is out of their sight, as Claude Code documents: only the
sandbox's mask hides it.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal, get_args

from ..sandbox.base import PathMask
from ..state import PermissionContext, PermissionMode, PermissionRule
from .base import Tool, get_tool_env, resolve_dir, resolve_tool_name
from .claude_code import CLAUDE_TOOLS
from .command_rules import (
    allowed_by_rules,
    command_rule_matches,
    escape_command,
    might_match,
    parses,
)
from .file_commands import files_read, files_written
from .filesystem import EDIT_TOOLS, edit_tools, read_tool

__all__ = [
    "CLAUDE_MODES",
    "COMMAND_TOOLS",
    "Decision",
    "PermissionDecision",
    "PermissionEngine",
    "format_rule",
    "parse_rule",
    "remember_rule",
    "limits_tool",
    "resolve_mode",
    "rule_matches",
]

Decision = Literal["allow", "deny", "ask"]

CLAUDE_MODES: Mapping[str, PermissionMode] = {
    "default": "default",
    "acceptEdits": "accept_edits",
    "dontAsk": "dont_ask",
    "bypassPermissions": "bypass",
    "plan": "plan",
}
"""Claude Code's permission mode names -> ours."""


def resolve_mode(name: str) -> PermissionMode:
    """Our permission mode for ``name``: Claude Code's (``acceptEdits``) or ours (``accept_edits``)."""
    if name in CLAUDE_MODES:
        return CLAUDE_MODES[name]
    if name in get_args(PermissionMode):
        return name  # type: ignore[return-value]
    choices = ", ".join(dict.fromkeys([*CLAUDE_MODES, *get_args(PermissionMode)]))
    raise ValueError(f"unknown permission mode {name!r}; use one of {choices}")


PATH_ARGUMENTS = frozenset(
    {"path", "file_path", "notebook_path", "filepath", "filename", "directory", "dir", "cwd"}
)

READING_TOOLS = frozenset({"grep_files", "glob_files", "list_files"})
"""Tools besides ``read_file`` that read files (Claude Code's Grep, Glob, LS): ``Read`` rules
apply to them too, as in Claude Code, on their path argument (the search root)."""

COMMAND_TOOLS = frozenset({"bash"})
"""Tools whose primary argument is a shell command, matched with Claude Code's Bash rules."""

_RULE = re.compile(r"\s*([^()\s]+)\s*(?:\((.*)\))?\s*", re.DOTALL)


@dataclass(frozen=True)
class PermissionDecision:
    """What to do with a call, why (a sentence the model can read), and the rule that decided."""

    behavior: Decision
    reason: str
    rule: PermissionRule | None = None


def parse_rule(text: str, behavior: Decision = "allow") -> PermissionRule:
    """``"write_file(src/**)"`` -> a rule on ``write_file`` with pattern ``src/**``; ``"Read"`` or
    ``"Read(*)"`` -> a rule on every ``Read`` call."""
    m = _RULE.fullmatch(text)
    if m is None:
        raise ValueError(
            f"invalid permission rule {text!r}: expected Tool or Tool(pattern), "
            "e.g. write_file(src/**)"
        )
    pattern = m.group(2).strip() if m.group(2) is not None else None
    return PermissionRule(
        tool=m.group(1), behavior=behavior, pattern=None if pattern in ("", "*", "**") else pattern
    )


def format_rule(rule: PermissionRule) -> str:
    """A rule in Claude-style notation, e.g. ``write_file(*.env)``."""
    text = rule.tool if rule.pattern is None else f"{rule.tool}({rule.pattern})"
    return text if rule.argument is None else f"{text} on argument {rule.argument!r}"


def _is_path_argument(tool: Tool, name: str) -> bool:
    prop = tool.parameters.get("properties", {}).get(name)
    return name in PATH_ARGUMENTS or (isinstance(prop, Mapping) and prop.get("format") == "path")


def _is_url_argument(tool: Tool, name: str) -> bool:
    prop = tool.parameters.get("properties", {}).get(name)
    return isinstance(prop, Mapping) and prop.get("format") == "uri"


def _lexical(value: str, workspace: Path | None) -> str:
    norm = posixpath.normpath(value) if value else "."
    if workspace is not None and posixpath.isabs(norm):
        try:
            return Path(norm).relative_to(workspace).as_posix() or "."
        except ValueError:
            return norm
    return norm


def _real(value: str, workspace: Path) -> str:
    real = Path(os.path.realpath(workspace / value))
    try:
        return real.relative_to(workspace).as_posix() or "."
    except ValueError:
        return str(real)


def _forms(tool: Tool, name: str, value: Any, workspace: Path | None) -> tuple[str, list[str]]:
    """(canonical form, every form) of an argument value for pattern matching."""
    raw = str(value)
    if not _is_path_argument(tool, name):
        return raw, [raw]
    lexical = _lexical(raw, workspace)
    canonical = _real(lexical, workspace) if workspace is not None else lexical
    return canonical, [raw, lexical, canonical]


def _workspace(workspace: Path | None) -> Path | None:
    if workspace is None:
        env = get_tool_env()
        return env.workspace if env is not None else None
    return resolve_dir(workspace)


def is_command_tool(tool: Tool) -> bool:
    """Whether ``tool`` runs shell commands (its rules are Bash rules)."""
    return resolve_tool_name(tool.name) in COMMAND_TOOLS


def _command(tool: Tool, arguments: Mapping[str, Any]) -> str | None:
    value = _argument(tool, tool.primary_argument, arguments)
    return value if isinstance(value, str) else None


def _tool_matches(pattern: str, name: str) -> bool:
    known = CLAUDE_TOOLS.get(pattern)
    if known is not None and name in known.natives:
        return True  # `Edit` is edit_file and multi_edit: the tools Claude Code's name stands for
    pattern, name = resolve_tool_name(pattern), resolve_tool_name(name)
    if pattern.startswith("mcp__") and "__" not in pattern[5:] and name.startswith(pattern + "__"):
        return True  # `mcp__<server>` names every tool of that MCP server, as in Claude Code
    return pattern == name or (any(c in pattern for c in "*?[") and fnmatchcase(name, pattern))


def _rule_names(rule: PermissionRule, tool: Tool) -> bool:
    """Whether ``rule`` is about ``tool``: its name, or, as in Claude Code, a ``Read`` rule and a
    tool that reads files (:data:`READING_TOOLS`), an ``Edit`` rule and a tool that edits them
    (:data:`~.filesystem.EDIT_TOOLS`), on the tool's path argument."""
    if _tool_matches(rule.tool, tool.name):
        return True
    family = {"read_file": READING_TOOLS, "edit_file": EDIT_TOOLS}.get(resolve_tool_name(rule.tool))
    return (
        family is not None
        and resolve_tool_name(tool.name) in family
        and rule.argument in (None, "path")
        and tool.primary_argument is not None
        and _is_path_argument(tool, tool.primary_argument)
    )


def limits_tool(rule: PermissionRule, tool: Tool) -> bool:
    """Whether a ``tools:`` entry with a pattern (``Edit(src/**)``) limits ``tool``: the tool its
    name resolves to, and the other tools that name stands for whose argument is of the same kind
    (``multi_edit``'s path for ``Edit``; for ``Bash``, only tools running a command, so neither
    ``bash_output`` nor ``kill_shell``, whose calls a command pattern can never match)."""
    main = resolve_tool_name(rule.tool)
    if main == tool.name:
        return True
    if not _tool_matches(rule.tool, tool.name):
        return False
    if main in COMMAND_TOOLS:
        return is_command_tool(tool)
    name = rule.argument or tool.primary_argument
    return name is not None and _is_path_argument(tool, name)


_MISSING = object()


def _argument(tool: Tool, name: str | None, arguments: Mapping[str, Any]) -> Any:
    """The argument's value, its schema default when absent, else ``_MISSING``."""
    if name is None:
        return _MISSING
    if name in arguments:
        return arguments[name]
    prop = tool.parameters.get("properties", {}).get(name)
    return prop.get("default", _MISSING) if isinstance(prop, Mapping) else _MISSING


PatternKind = Literal["absolute", "anchored", "any_depth"]


def _path_pattern(pattern: str) -> tuple[str, PatternKind]:
    """A path pattern as Claude Code reads it (gitignore's reading, relative to the workspace),
    and where it applies: ``//abs/path`` from the file-system root and ``~/path`` from the home
    directory (``"absolute"``: matched against absolute paths); ``/path`` from the workspace
    (Claude Code's project root) and any pattern with a slash inside (``config/.env``,
    ``secrets/**``) relative to it (``"anchored"``); a pattern without a slash (``.env``,
    ``*.pem``, ``secrets``, ``secrets/``) names that name at any depth (``"any_depth"``).
    ``./path`` is ``path``: Claude Code strips the ``./``, so ``Read(./.env)`` is ``Read(.env)``."""
    if len(pattern) > 1 and pattern.endswith("/"):  # secrets/ (a directory): what is under it
        pattern = pattern.rstrip("/") or "/"
    if pattern.startswith("//"):
        return pattern[1:], "absolute"
    if pattern == "~" or pattern.startswith("~/"):
        return os.path.expanduser("~") + pattern[1:], "absolute"
    while pattern.startswith("./"):  # Read(./secrets/**) names secrets/**, as in Claude Code
        pattern = pattern[2:]
    if pattern.startswith("/"):  # Edit(/src/**): from the project root, here the workspace
        return pattern.lstrip("/") or ".", "anchored"
    return pattern, "anchored" if "/" in pattern else "any_depth"


def _glob(form: str, pattern: str, kind: PatternKind) -> bool:
    """Whether the path ``form`` (relative to the workspace, or absolute) matches ``pattern`` of
    that ``kind`` (:func:`_path_pattern`). ``*`` spans ``/`` (broader than gitignore's); as in
    gitignore, ``**/`` also matches no directory: at the start (``**/.env`` names ``.env``) and
    between slashes (``a/**/b`` names ``a/b``)."""
    if kind == "any_depth" and fnmatchcase(posixpath.basename(form), pattern):
        return True
    return any(fnmatchcase(form, p) for p in _no_directory_forms(pattern, kind))


def _no_directory_forms(pattern: str, kind: PatternKind) -> list[str]:
    """``pattern`` and its forms with a ``**/`` matching no directory."""
    forms = [pattern]
    if "/**/" in pattern:
        forms.append(pattern.replace("/**/", "/"))
    if kind != "absolute" and pattern.startswith("**/"):
        forms += [f[3:] for f in list(forms)]
    return forms


def _with_ancestors(form: str) -> list[str]:
    """``a/b/c`` -> ``a/b/c``, ``a/b``, ``a``: a deny or ask rule naming a directory covers what
    is under it (gitignore's reading, which Claude Code's path rules follow)."""
    found = [form]
    while (parent := posixpath.dirname(found[-1])) not in ("", found[-1]):
        found.append(parent)
    return found


def _absolute(form: str, workspace: Path | None) -> str:
    """A form of a path argument as an absolute path (relative ones are in the workspace)."""
    if posixpath.isabs(form) or workspace is None:
        return form
    return posixpath.normpath(posixpath.join(workspace.as_posix(), form))


def rule_matches(
    rule: PermissionRule,
    tool: Tool,
    arguments: Mapping[str, Any],
    *,
    workspace: Path | None = None,
) -> bool:
    """True if ``rule`` applies to this call of ``tool`` (see the module docstring)."""
    if not _rule_names(rule, tool):
        return False
    if rule.pattern is None:
        return True
    if rule.pattern.startswith("domain:"):  # WebFetch(domain:host): host or subdomain of the URL
        from .web.urls import web_rule_matches

        return web_rule_matches(rule.pattern, tool, arguments)
    name = rule.argument or tool.primary_argument
    value = _argument(tool, name, arguments)
    if name is None or value is _MISSING:
        return False
    if is_command_tool(tool) and name == tool.primary_argument:
        every_part = rule.behavior == "allow"
        return command_rule_matches(rule.pattern, str(value), every_part=every_part)
    root = _workspace(workspace)
    canonical, forms = _forms(tool, name, value, root)
    if _is_path_argument(tool, name):
        return _path_matches(rule.behavior, rule.pattern, canonical, forms, root)
    if rule.behavior == "allow":
        return fnmatchcase(canonical, rule.pattern)
    return any(fnmatchcase(f, rule.pattern) for f in forms)


def _path_matches(
    behavior: Decision, pattern: str, canonical: str, forms: list[str], root: Path | None
) -> bool:
    """Whether a path ``pattern`` matches a path argument given as its ``canonical`` form and
    all its ``forms`` (an allow rule the canonical one; a deny or ask rule any, or an ancestor).
    A pattern relative to the workspace allows no path outside it (an absolute form)."""
    pattern, kind = _path_pattern(pattern)
    if behavior != "allow":
        forms = [a for f in forms for a in _with_ancestors(f)]
    if kind == "absolute":  # Read(//abs/**), Read(~/.ssh/**): the absolute path of each form
        canonical, forms = _absolute(canonical, root), [_absolute(f, root) for f in forms]
    if behavior == "allow":
        outside = kind != "absolute" and posixpath.isabs(canonical)
        if kind == "any_depth":
            canonical = posixpath.basename(canonical)
        return not outside and _pathname_glob(pattern).fullmatch(canonical) is not None
    return any(_glob(f, pattern, kind) for f in forms)


@functools.lru_cache(maxsize=512)
def _pathname_glob(pattern: str) -> re.Pattern[str]:
    """``pattern`` as gitignore matches a path (what an allow rule grants, no more): ``*`` and
    ``?`` within one directory, ``[...]`` a character class (``[!...]`` negated), a ``**`` path
    component any number of directories (``a/**/b`` names ``a/b`` too; a trailing ``/**``
    everything below)."""
    parts = pattern.split("/")
    out: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        out.append(_component(part) + ("" if last else "/"))
    return re.compile("".join(out), re.DOTALL)


def _class_start(head: str) -> int:
    """Where the closing ``]`` of a class starting with ``head`` may be: a ``]`` first (after a
    ``!``) is a member."""
    negated = head.startswith("!")
    return negated + (head[negated : negated + 1] == "]")


def _component(part: str) -> str:
    """The regex of one path component of a glob pattern."""
    out: list[str] = []
    i = 0
    while i < len(part):
        c = part[i]
        i += 1
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[" and (end := part.find("]", i + _class_start(part[i : i + 2]))) > 0:
            body = part[i:end]
            negated = body.startswith("!")
            chars = "".join(c if c == "-" else re.escape(c) for c in body[negated:])
            out.append(f"[{'^' if negated else ''}{chars}]")
            i = end + 1
        else:
            out.append(re.escape(c))
    return "".join(out)


def real_path_matches(rule: PermissionRule, path: str, *, workspace: Path) -> bool:
    """What :func:`rule_matches` answers for a call of a tool ``rule`` names with ``path`` as
    its path argument, for a ``path`` relative to ``workspace`` (a resolved directory) that is
    already real (no symlink, ``.`` or ``..`` in it, as a walk that follows no symlink finds
    it): without touching the file system."""
    if rule.pattern is None:
        return True
    if rule.pattern.startswith("domain:"):
        return False
    return _path_matches(rule.behavior, rule.pattern, path, [path], workspace)


def covers_below(rule: PermissionRule, directory: str, *, workspace: Path) -> bool:
    """Whether ``rule``'s path pattern matches every path below ``directory`` (relative to
    ``workspace``, ``.`` for itself), whatever its name: no pattern, or one ending in ``*``
    (which spans ``/``) that matches ``directory/``, as ``secrets/**`` matches ``secrets/``.
    (``rule_matches`` of ``directory`` itself covers ``Read(secrets)``.)"""
    if rule.pattern is None:
        return True
    pattern, kind = _path_pattern(rule.pattern)
    if kind == "absolute":
        form = _absolute(directory, workspace).rstrip("/") + "/"
    elif kind == "any_depth":
        form = posixpath.basename(directory) + "/"
    else:
        form = "" if directory == "." else directory + "/"
    if not pattern.endswith("*"):
        return False
    return any(fnmatchcase(form, p) for p in _no_directory_forms(pattern, kind))


def named_path(rule: PermissionRule, *, workspace: Path) -> tuple[str, bool] | None:
    """The one path of ``workspace`` (relative to it) that ``rule``'s path pattern names without
    a wildcard, whether or not it exists, and whether the pattern names it as a directory:
    ``secrets/**``, ``secrets/`` -> (``secrets``, True); ``/.env``, ``config/.env``,
    ``//<workspace>/k`` -> (that path, False); a name without a slash (``.env``, any depth) ->
    the one at the top. None for a pattern with a wildcard elsewhere, outside the workspace, or
    none."""
    if rule.pattern is None or rule.pattern.startswith("domain:"):
        return None
    pattern, kind = _path_pattern(rule.pattern)
    directory = rule.pattern.endswith("/")
    if pattern.endswith("/**"):
        pattern, directory = pattern[:-3], True
    if kind == "absolute":
        relative = posixpath.relpath(pattern, workspace.as_posix())
        if relative.startswith("../") or relative == "..":
            return None
        pattern = relative
    pattern = posixpath.normpath(pattern)
    if pattern in (".", "..") or pattern.startswith("../") or any(c in pattern for c in "*?["):
        return None
    return pattern, directory


def _escape(value: str) -> str:
    return re.sub(r"([*?[])", r"[\1]", value)


def remember_rule(
    tool: Tool, arguments: Mapping[str, Any], *, workspace: Path | None = None
) -> PermissionRule:
    """The allow rule stored when a user confirms a call with remember=True: this tool with this
    exact primary argument (every call of the tool if it has none). A path is written so that it
    names that path only: ``//abs/path`` outside the workspace, ``/rel/path`` inside it (a bare
    ``notes.md`` would name ``notes.md`` at any depth)."""
    name = tool.primary_argument
    value = _argument(tool, name, arguments)
    if name is None or value is _MISSING:
        return PermissionRule(tool=tool.name, behavior="allow")
    if _is_url_argument(tool, name):  # a URL is remembered as its domain: web_fetch(domain:host)
        from .web.urls import domain_pattern

        if pattern := domain_pattern(str(value)):
            return PermissionRule(tool=tool.name, behavior="allow", pattern=pattern)
    if is_command_tool(tool):  # Bash(<the exact command>), as Claude Code writes it
        return PermissionRule(tool=tool.name, behavior="allow", pattern=escape_command(str(value)))
    canonical, _ = _forms(tool, name, value, _workspace(workspace))
    pattern = _escape(canonical)
    if _is_path_argument(tool, name):  # that path only: //abs/path, or /rel from the workspace
        pattern = "/" + pattern if posixpath.isabs(canonical) else "/" + pattern.lstrip("/")
    return PermissionRule(tool=tool.name, behavior="allow", pattern=pattern, argument=name)


def _unparsed_under_deny(
    rules: Sequence[PermissionRule], tool: Tool, arguments: Mapping[str, Any]
) -> PermissionRule | None:
    """A deny rule with a pattern for this shell tool if the command cannot be parsed; else a deny
    or ask rule that might apply once the words only known when the shell runs are
    (:func:`~.command_rules.might_match`)."""
    command = _command(tool, arguments)
    if command is None:
        return None
    unparsed = not parses(command)
    return next(
        (
            r
            for r in rules
            if r.pattern is not None
            and _tool_matches(r.tool, tool.name)
            and (
                (r.behavior == "deny" and unparsed)
                or (r.behavior in ("deny", "ask") and might_match(r.pattern, command))
            )
        ),
        None,
    )


def _allowed_part_by_part(
    rules: Sequence[PermissionRule], tool: Tool, arguments: Mapping[str, Any]
) -> list[PermissionRule]:
    """The allow rules that together allow every simple command of the call, or []."""
    command = _command(tool, arguments)
    mine = [
        r
        for r in rules
        if r.behavior == "allow"
        and r.pattern is not None
        and r.argument in (None, tool.primary_argument)
        and _tool_matches(r.tool, tool.name)
    ]
    if command is None or not mine:
        return []
    return mine if allowed_by_rules([r.pattern for r in mine if r.pattern], command) else []


def _file_access_denied(
    rules: Sequence[PermissionRule],
    tool: Tool,
    arguments: Mapping[str, Any],
    workspace: Path | None,
) -> PermissionDecision | None:
    """The denial of a shell command whose recognized file commands read a path ``read_file``
    would be denied (``cat .env``, ``wc -l < .env``) or change one an editing tool would be
    denied (``echo x > docs/a.md``, ``sed -i ... docs/a.md``: :mod:`.file_commands`), as Claude
    Code applies ``Read`` and ``Edit`` deny rules to them; else None."""
    command = _command(tool, arguments)
    denials = [r for r in rules if r.behavior == "deny"]
    if command is None or not denials:
        return None
    checks = ((files_read, (read_tool(),), "reads"), (files_written, edit_tools(), "changes"))
    for files, tools, verb in checks:
        mine = [(r, t) for r in denials for t in tools if _rule_names(r, t)]
        for path in files(command) if mine else ():
            for rule, named in mine:
                if rule_matches(rule, named, {"path": path}, workspace=workspace):
                    return PermissionDecision(
                        "deny",
                        f"denied by rule deny {format_rule(rule)}: the command {verb} {path}; do "
                        "not retry this call, nor reach that file another way",
                        rule,
                    )
    return None


#: The refusal of an "ask" in dontAsk mode; ``{tool}`` and ``{reason}`` (why it would ask) are
#: filled in. An ``unattended=`` engine's own refusal has the same fields.
DONT_ASK = "denied: {reason}, and the agent runs in dontAsk mode (nothing is asked); do not retry this call"


class PermissionEngine:
    """Decides whether a tool call runs, is refused, or waits for the user (module docstring).

    ``unattended``: the refusal (with ``{tool}`` and ``{reason}``) of every call that would ask,
    for an agent nobody can answer; those tools are appended to :attr:`refused` for the caller
    to report (a team member's record). None (the default): calls ask, unless in dontAsk mode.
    """

    def __init__(
        self,
        rules: Sequence[PermissionRule] = (),
        mode: PermissionMode = "default",
        *,
        unattended: str | None = None,
    ) -> None:
        self.rules = tuple(rules)
        self.mode: PermissionMode = resolve_mode(mode)
        self.unattended = unattended
        #: The tools refused for want of anyone to ask (``unattended``), oldest first.
        self.refused: list[str] = []

    def in_mode(self, mode: PermissionMode) -> PermissionEngine:
        """This engine's rules (and ``unattended``) in ``mode``: itself when it is in it. A
        spawned agent inherits its parent's rules in the mode the parent's session is in."""
        if mode == self.mode:
            return self
        return PermissionEngine(self.rules, mode, unattended=self.unattended)

    def with_rules(self, rules: Sequence[PermissionRule]) -> PermissionEngine:
        """A new engine: this one's rules, then ``rules``, in the same mode and ``unattended``,
        sharing :attr:`refused` (a caller reading this engine's refusals still sees them)."""
        engine = PermissionEngine([*self.rules, *rules], self.mode, unattended=self.unattended)
        engine.refused = self.refused
        return engine

    def effective_mode(self, context: PermissionContext | None = None) -> PermissionMode:
        """The session's mode unless it is "default", else the engine's."""
        if context is not None and (context.mode != "default" or context.mode_chosen):
            return context.mode
        return self.mode

    def never_ask(
        self, decision: PermissionDecision, mode: PermissionMode, tool: Tool
    ) -> PermissionDecision:
        """``decision``, unless it asks with nobody to ask: dontAsk mode, or an unattended engine
        (whose refusals are listed in :attr:`refused`). :meth:`check` applies it to the rules'
        decision, the agent to one a PreToolUse hook turned into an ask."""
        if decision.behavior != "ask":
            return decision
        if mode == "dont_ask":
            refusal = DONT_ASK
        elif self.unattended is not None:
            refusal = self.unattended
            self.refused.append(tool.name)
        else:
            return decision
        reason = refusal.format(tool=tool.name, reason=decision.reason)
        return PermissionDecision("deny", reason, decision.rule)

    def check(
        self,
        tool: Tool,
        arguments: Mapping[str, Any],
        context: PermissionContext | None = None,
        *,
        workspace: Path | None = None,
    ) -> PermissionDecision:
        """The decision for one call, with its reason. ``workspace`` (default: the current
        ToolEnv's) lets path patterns see through symlinks and absolute paths; it is resolved
        only when a rule's pattern is matched against a path."""
        mode = self.effective_mode(context)
        return self.never_ask(self._check(tool, arguments, context, mode, workspace), mode, tool)

    def _check(
        self,
        tool: Tool,
        arguments: Mapping[str, Any],
        context: PermissionContext | None,
        mode: PermissionMode,
        workspace: Path | None,
    ) -> PermissionDecision:
        rules = [*self.rules, *(context.rules if context is not None else ())]
        for rule in rules:
            if rule.behavior == "deny" and rule_matches(rule, tool, arguments, workspace=workspace):
                return PermissionDecision(
                    "deny", f"denied by rule deny {format_rule(rule)}; do not retry this call", rule
                )
        if is_command_tool(tool):
            denied = _file_access_denied(rules, tool, arguments, workspace)
            if denied is not None:
                return denied
        if tool.asks_user:
            return PermissionDecision("ask", f"{tool.name} asks the user")
        if mode == "plan" and not (tool.read_only or tool.plan_checked):
            return PermissionDecision(
                "deny",
                f"denied: the agent is in plan mode, which is read-only, and {tool.name} can change "
                "files or state; plan with read-only tools and ask the user to leave plan mode",
            )
        if is_command_tool(tool):
            doubt = _unparsed_under_deny(rules, tool, arguments)
            if doubt is not None:
                return PermissionDecision(
                    "ask",
                    "requires confirmation: the command (or one it wraps) cannot be read with "
                    f"certainty, so whether {doubt.behavior} rule {format_rule(doubt)} applies "
                    "is unknown",
                    doubt,
                )
        for behavior in ("ask", "allow"):
            for rule in rules:
                if rule.behavior == behavior and rule_matches(
                    rule, tool, arguments, workspace=workspace
                ):
                    verb = "requires confirmation" if behavior == "ask" else "allowed"
                    reason = f"{verb} by rule {behavior} {format_rule(rule)}"
                    return PermissionDecision(rule.behavior, reason, rule)
        if is_command_tool(tool):
            allowed = _allowed_part_by_part(rules, tool, arguments)
            if allowed:
                names = ", ".join(format_rule(r) for r in allowed)
                return PermissionDecision("allow", f"allowed: each part by one of {names}")
        return self._default(tool, mode)

    def _default(self, tool: Tool, mode: PermissionMode) -> PermissionDecision:
        if mode == "bypass":
            return PermissionDecision("allow", "allowed: bypass mode")
        if mode == "plan" and tool.requires_confirmation:
            return PermissionDecision("ask", f"{tool.name} requires confirmation")
        if mode == "plan":
            return PermissionDecision("allow", f"allowed: {tool.name} is read-only (plan mode)")
        if mode == "accept_edits" and (
            tool.read_only or resolve_tool_name(tool.name) in EDIT_TOOLS
        ):
            return PermissionDecision("allow", f"allowed: accept_edits mode allows {tool.name}")
        if tool.requires_confirmation:
            return PermissionDecision("ask", f"{tool.name} requires confirmation")
        return PermissionDecision("allow", f"allowed: {tool.name} needs no confirmation")

    def decide(
        self,
        tool: Tool,
        arguments: Mapping[str, Any],
        context: PermissionContext | None = None,
        *,
        workspace: Path | None = None,
    ) -> Decision:
        """Just the behavior of :meth:`check`."""
        return self.check(tool, arguments, context, workspace=workspace).behavior

    explain = check

    def read_guard(
        self, context: PermissionContext | None = None, *, workspace: Path | None = None
    ) -> Callable[[str], str | None]:
        """What the file tools that list or search ask of each path they would show
        (``ToolEnv.read_guard``): the refusal naming the deny rule if ``read_file`` of that path
        (relative to ``workspace``) would be denied by a rule, else None. The rules are read at
        each question, so a rule added to ``context`` during the call counts."""

        def refusal(path: str) -> str | None:
            arguments = {"path": path}
            for rule in (*self.rules, *(context.rules if context is not None else ())):
                if rule.behavior == "deny" and rule_matches(
                    rule, read_tool(), arguments, workspace=workspace
                ):
                    return f"denied by rule deny {format_rule(rule)}"
            return None

        return refusal

    def sandbox_mask(
        self, context: PermissionContext | None = None, *, workspace: Path
    ) -> Callable[[], PathMask]:
        """What a contained sandbox hides from a command in ``workspace`` or keeps read-only
        there (``ToolEnv.sandbox_mask``): the paths this engine's and ``context``'s ``Read`` and
        ``Edit`` deny rules cover, found when it is called (:func:`~.sandbox_mask.mask_for`), so
        a rule added to ``context`` during the call counts."""
        from .sandbox_mask import mask_for

        def mask() -> PathMask:
            return mask_for((*self.rules, *(context.rules if context else ())), workspace)

        return mask

    def remember_rule(
        self, tool: Tool, arguments: Mapping[str, Any], *, workspace: Path | None = None
    ) -> PermissionRule:
        """See :func:`remember_rule`."""
        return remember_rule(tool, arguments, workspace=workspace)
