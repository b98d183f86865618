"""The Python API page (``api.md``), generated from the public names and their docstrings.

A public name is one a package lists in ``__all__``. For each: where it is defined, its signature,
the first paragraph of its docstring and, for a class, its public methods and properties defined
on the class itself (one line each). ``generate.py`` writes the page and its ``--check`` (run by the
tests) fails when the page is out of date, so a new or renamed public name shows up here.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

#: The packages whose ``__all__`` is the public API, in the order the page lists them.
PACKAGES = (
    "agentscope_teams",
    "agentscope_teams.model",
    "agentscope_teams.store",
    "agentscope_teams.tools",
    "agentscope_teams.subagents",
    "agentscope_teams.teams",
    "agentscope_teams.tracing",
)
_ROLE = re.compile(r":[a-z]+:`~?\.*([^`<]*?)(?:\s*<[^>]*>)?`")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def summary(obj: Any) -> str:
    """The first paragraph of ``obj``'s own docstring, on one line, in Markdown."""
    own = vars(obj).get("__doc__") if inspect.isclass(obj) else getattr(obj, "__doc__", None)
    doc = inspect.cleandoc(own) if isinstance(own, str) else ""  # never a base class's
    first = doc.split("\n\n", 1)[0]
    text = _ROLE.sub(lambda m: f"`{m.group(1).split('.')[-1] or m.group(1)}`", first)
    text = text.replace("``", "`")
    return " ".join(text.split()).replace("|", "\\|")


def signature(obj: Any) -> str:
    """``obj``'s call signature, without memory addresses (so the page is the same every run)."""
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""
    return _ADDRESS.sub("", text)


def _members(cls: type) -> list[str]:
    """One line for each public method or property ``cls`` defines itself."""
    lines = []
    for name, value in vars(cls).items():
        if name.startswith("_") or name.startswith("model_"):
            continue
        target = value.__func__ if isinstance(value, classmethod | staticmethod) else value
        if isinstance(value, property):
            lines.append(f"  - `{name}` (property): {summary(value) or '(no docstring)'}")
        elif inspect.isfunction(target):
            line = f"  - `{name}{signature(target)}`"
            lines.append(line + (f": {summary(target)}" if summary(target) else ""))
    return lines


def _entry(name: str, obj: Any) -> list[str]:
    home = getattr(obj, "__module__", None) or "?"
    if inspect.ismodule(obj):
        return [f"- **module `{obj.__name__}`**", f"  {summary(obj) or '(no docstring)'}"]
    if inspect.isclass(obj):
        head = f"- **class `{name}{signature(obj)}`** (`{home}`)"
        return [head, f"  {summary(obj) or '(no docstring)'}", *_members(obj)]
    if callable(obj):
        head = f"- **`{name}{signature(obj)}`** (`{home}`)"
        return [head, f"  {summary(obj) or '(no docstring)'}"]
    return [f"- **`{name}`** = `{_value(obj)}`"]


def _value(obj: Any) -> str:
    """A constant's value as the page shows it: sets sorted, so it is the same every run."""
    if isinstance(obj, frozenset | set):
        text = "{" + ", ".join(sorted(repr(v) for v in obj)) + "}"
    else:
        text = _ADDRESS.sub("", repr(obj))
    return text if len(text) <= 120 else text[:119] + "…"


def api_page(generated: str) -> str:
    """The whole page; ``generated`` is the marker line of generated pages."""
    lines = [
        "# Python API",
        "",
        generated,
        "",
        "The public names of each package (its `__all__`), with signatures and the first paragraph "
        "of their docstrings. A renamed public name keeps working for at least one minor release "
        "with a `DeprecationWarning` ([deprecation policy](../deprecation.md)).",
        "",
    ]
    for package in PACKAGES:
        module = importlib.import_module(package)
        lines += [f"## `{package}`", "", summary(module), ""]
        seen: set[int] = set()
        for name in sorted(getattr(module, "__all__", ()), key=str.lower):
            obj = getattr(module, name)
            if package != PACKAGES[0] and id(obj) in seen:
                continue
            seen.add(id(obj))
            lines += [*_entry(name, obj), ""]
    return "\n".join(lines).rstrip() + "\n"
