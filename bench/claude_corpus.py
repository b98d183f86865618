"""What Claude Code agent files lose here: load each file alone and count what is not honoured.

    python -m bench.claude_corpus DIR [DIR ...]

Every agent file under the directories (see :func:`agent_files`) is loaded with :meth:`SubagentSpec.from_file`. The table counts files that lose a Claude Code tool
(:attr:`SubagentSpec.unavailable_tools`; ``WebSearch`` apart, since it is offered only when a search
provider is configured) and the frontmatter keys kept in ``extra`` (not acted on). Files that do not
load are counted as errors, each printed with its first problem (file:line: reason). Fetch real collections to measure (the bench has no corpus of its own).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from agentscope_teams.errors import SpecError
from agentscope_teams.subagents import SubagentSpec


@dataclass
class Tally:
    files: int = 0
    errors: int = 0
    losing: int = 0
    lost: Counter[str] = field(default_factory=Counter)
    extra: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)  # "file:line: reason" of each error


SKIP = frozenset({"README.MD", "CLAUDE.MD", "CONTRIBUTING.MD", "SKILL.MD", "CHANGELOG.MD"})


def agent_files(root: Path) -> list[Path]:
    """Claude Code agent files under ``root``: a frontmatter with ``description:``, in an
    ``agents`` folder or with ``name:`` too (not skills, commands, output styles or project
    documents)."""
    found = []
    for path in sorted(root.rglob("*.md")):
        parts = set(path.parent.parts)
        if path.name.upper() in SKIP or parts & {"commands", "skills", "output-styles"}:
            continue
        head = path.read_text(encoding="utf-8", errors="replace")[:4000]
        if not head.startswith("---") or "\ndescription:" not in head:
            continue
        if "agents" in parts or "\nname:" in head:
            found.append(path)
    return found


def measure(paths: list[Path]) -> Tally:
    tally = Tally()
    for path in paths:
        tally.files += 1
        try:
            spec = SubagentSpec.from_file(path)
        except SpecError as exc:
            tally.errors += 1
            tally.failed.append(str(exc).splitlines()[0])
            continue
        lost = [t for t in spec.unavailable_tools if t != "WebSearch"]
        if lost:
            tally.losing += 1
            tally.lost.update(lost)
        tally.extra.update(spec.extra.keys())
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    total = Tally()
    for root in args.dirs:
        tally = measure(agent_files(root))
        share = tally.losing / max(tally.files - tally.errors, 1)
        print(
            f"{root}: {tally.files} files, {tally.errors} errors, {tally.losing} lose a tool ({share:.1%})"
        )
        for failure in tally.failed:
            print(f"  {failure}")
        total.files += tally.files
        total.errors += tally.errors
        total.losing += tally.losing
        total.lost.update(tally.lost)
        total.extra.update(tally.extra)
    loaded = max(total.files - total.errors, 1)
    print(
        f"\nall: {total.files} files, {total.errors} errors, {total.losing} lose a tool "
        f"({total.losing / loaded:.1%} of {loaded} loaded)"
    )
    print("lost tools:", ", ".join(f"{k} {v}" for k, v in total.lost.most_common()) or "none")
    print(
        "keys kept in extra:", ", ".join(f"{k} {v}" for k, v in total.extra.most_common()) or "none"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
