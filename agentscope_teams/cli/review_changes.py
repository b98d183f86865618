"""``review PATH --changed-since REF``: what the lead needs to review only the changed files.

The lead asks the git MCP server (``mcp-server-git``, run as a stdio server for this review) for
the diff against REF; this module checks what can be checked before the run starts (the ``mcp``
extra and the server are installed, PATH is inside a git repository, REF names a commit) and gives
the run the server's configuration and the lines of the lead's instruction. After the run it gives
the report the lines changed since REF (:meth:`ChangedSince.changed_lines`), so findings on them
come first and the others are marked.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .common import CommandError

#: The MCP tools the lead may use: the read-only ones it needs, never a commit or a checkout.
LEAD_GIT_TOOLS = ("mcp__git__git_diff", "mcp__git__git_log", "mcp__git__git_status")
#: A unified diff hunk header; its new side starts at group 1 and spans group 2 lines (default 1).
_HUNK = re.compile(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")

#: Per file (relative to the reviewed directory), the line ranges (first, last) changed since REF.
ChangedLines = dict[str, list[tuple[int, int]]]


@dataclass(frozen=True)
class ChangedSince:
    """A ``--changed-since`` review: the ref, the repository root and PATH inside it."""

    ref: str
    repository: Path
    prefix: str

    def instruction_lines(self) -> str:
        return (
            f"Changed since: {self.ref}\nRepository: {self.repository}\n"
            f"Target in repository: {self.prefix}\n"
        )

    def mcp_servers(self) -> dict[str, object]:
        args = ["-m", "mcp_server_git", "--repository", str(self.repository)]
        # our own server, started by this command: its read-only annotations are believed
        return {"git": {"command": sys.executable, "args": args, "trustAnnotations": True}}

    def changed_lines(self) -> ChangedLines:
        """The lines changed since REF in the working tree (what ``git diff REF`` shows, as the
        lead saw it), per file under the reviewed directory; empty if git fails."""
        diff = _git(
            self.repository, "diff", "-U0", "--no-color", "--no-ext-diff", self.ref, "--",
            self.prefix,
        )  # fmt: skip
        return parse_changed_lines(diff or "", self.prefix)


def parse_changed_lines(diff: str, prefix: str = ".") -> ChangedLines:
    """The new-side line ranges of a ``git diff -U0``, per file relative to ``prefix`` (a deleted
    file has none; a hunk that only deletes marks the line before the deletion)."""
    out: ChangedLines = {}
    current: list[tuple[int, int]] | None = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[4:].strip().strip('"')
            current = None
            if path.startswith("b/"):
                name = _under(path[2:], prefix)
                current = None if name is None else out.setdefault(name, [])
        elif current is not None and (hunk := _HUNK.match(line)):
            first, span = int(hunk[1]), int(hunk[2] or 1)
            current.append((first, first + max(span, 1) - 1))
    return out


def _under(path: str, prefix: str) -> str | None:
    """``path`` relative to ``prefix`` (both repository-relative), or None outside it."""
    if prefix in (".", ""):
        return path
    return path[len(prefix) + 1 :] if path.startswith(prefix + "/") else None


def check_mcp_installed() -> None:
    missing = [name for name in ("mcp", "mcp_server_git") if importlib.util.find_spec(name) is None]
    if missing:
        packages = " and ".join("mcp-server-git" if m == "mcp_server_git" else m for m in missing)
        raise CommandError(
            f"--changed-since reads the changes through the git MCP server, which needs {packages}: "
            "pip install 'agentscope-teams[mcp]' mcp-server-git (or review the whole directory "
            "without --changed-since)"
        )


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def changed_since(path: Path, ref: str) -> ChangedSince:
    """Check ``--changed-since REF`` for the reviewed directory ``path`` (resolved)."""
    if not ref.strip() or ref.startswith("-"):
        raise CommandError(f"--changed-since needs a git ref such as main or HEAD~3, got {ref!r}")
    check_mcp_installed()
    top = _git(path, "rev-parse", "--show-toplevel")
    if top is None:
        raise CommandError(
            f"{path} is not inside a git repository (or git is not installed); "
            "--changed-since compares with a git ref"
        )
    root = Path(top).resolve()
    if _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") is None:
        raise CommandError(
            f"{ref!r} is not a commit of the repository at {root}; pass a branch, tag or commit"
        )
    prefix = path.relative_to(root).as_posix() if path != root else "."
    return ChangedSince(ref, root, prefix)
