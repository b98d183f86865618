"""``agentscope-teams review PATH --changed-since REF``: the lead reads the diff through the git
MCP server and the team reviews only the Python files changed since REF."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from agentscope_teams.cli import review_changes
from agentscope_teams.cli.common import CommandError

from ..cli.conftest import REPO, Cli, one_error_line

SAMPLE = REPO / "examples" / "sample_project"


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=dev@example.com", "-c", "user.name=Dev", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository holding the sample project under ``src/``, committed, then changed: one file
    edited (a new shell call), one deleted, one new file staged, a README edited."""
    root = tmp_path / "repo"
    shutil.copytree(SAMPLE, root / "src")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the sample project")
    with (root / "src" / "app" / "config.py").open("a") as f:
        f.write("\n\ndef purge(path):\n    import os\n    os.system('rm -rf ' + path)\n")
    (root / "src" / "app" / "pagination.py").unlink()
    (root / "src" / "app" / "fresh.py").write_text("def fresh(x):\n    return eval(x)\n")
    (root / "src" / "README.md").write_text("changed\n")
    git(root, "add", "src/app/fresh.py")
    return root


def review(cli: Cli, target: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = cli.tmp_path / "review.md"
    return cli.run("review", str(target), "--store", cli.url, "--output", str(out), *args)


def test_only_the_changed_python_files_are_reviewed(cli: Cli, repo: Path) -> None:
    result = review(cli, repo / "src", "--changed-since", "HEAD", "--json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    calls = [e["tool_call"] for e in events if e["type"] == "tool_call"]
    assert calls[0]["name"] == "mcp__git__git_diff"
    assert calls[0]["input"]["target"] == "HEAD"
    assert "glob_files" not in [c["name"] for c in calls]
    diff = next(e for e in events if e["type"] == "tool_result")["result"]
    assert not diff["is_error"] and "+++ b/src/app/config.py" in diff["output"]
    assert events[-1]["files"] == 2  # config.py and fresh.py; pagination.py was deleted
    report = (cli.tmp_path / "review.md").read_text()
    assert "`app/config.py:" in report and "`app/fresh.py:2`" in report
    for untouched in ("app/auth.py", "app/db.py", "app/utils.py"):
        assert untouched not in report
    # findings on the changed lines come first and unmarked; the rest say they are not changed
    bullets = [line for line in report.splitlines() if line.startswith("- `app/")]
    marked = [b.split("`")[1] for b in bullets if b.endswith("on a line unchanged since HEAD")]
    fresh = [b.split("`")[1] for b in bullets if b not in marked and "unchanged" not in b]
    assert fresh == ["app/config.py:57", "app/fresh.py:2"]  # the new shell call, the new eval
    assert marked and all(m.startswith("app/config.py:") for m in marked)
    assert f"2 of the {len(bullets)} findings are on lines changed since HEAD" in report


def test_a_diff_gives_the_changed_lines_under_the_reviewed_directory() -> None:
    diff = "\n".join(
        [
            "diff --git a/src/app/config.py b/src/app/config.py",
            "--- a/src/app/config.py",
            "+++ b/src/app/config.py",
            "@@ -40 +40 @@ def load():",
            "@@ -52,0 +53,4 @@ def save():",
            "@@ -60,3 +63,0 @@",
            "diff --git a/src/app/gone.py b/src/app/gone.py",
            "--- a/src/app/gone.py",
            "+++ /dev/null",
            "@@ -1,5 +0,0 @@",
            "--- /dev/null",
            "+++ b/src/app/new.py",
            "@@ -0,0 +1,2 @@",
            "+++ b/docs/outside.py",
            "@@ -1 +1 @@",
        ]
    )
    assert review_changes.parse_changed_lines(diff, "src") == {
        "app/config.py": [(40, 40), (53, 56), (63, 63)],
        "app/new.py": [(1, 2)],
    }
    assert "docs/outside.py" in review_changes.parse_changed_lines(diff, ".")


def test_no_change_is_a_short_report(cli: Cli, repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the changes")
    result = review(cli, repo / "src", "--changed-since", "HEAD")
    assert result.returncode == 0, result.stderr
    assert "No Python file changed since HEAD." in (cli.tmp_path / "review.md").read_text()


def test_a_bad_ref_and_a_directory_outside_git_are_clear_errors(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    bad = review(cli, repo / "src", "--changed-since", "no-such-branch")
    assert bad.returncode == 1
    assert "'no-such-branch' is not a commit of the repository" in one_error_line(bad)
    plain = tmp_path / "plain"
    shutil.copytree(SAMPLE, plain)
    outside = review(cli, plain, "--changed-since", "HEAD")
    assert outside.returncode == 1 and "is not inside a git repository" in one_error_line(outside)


def test_without_the_mcp_extra_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = review_changes.importlib.util.find_spec
    monkeypatch.setattr(
        review_changes.importlib.util,
        "find_spec",
        lambda name: None if name in ("mcp", "mcp_server_git") else real(name),
    )
    with pytest.raises(CommandError) as err:
        review_changes.check_mcp_installed()
    assert "pip install 'agentscope-teams[mcp]' mcp-server-git" in str(err.value)
