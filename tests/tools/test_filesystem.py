from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.message import ToolResultBlock, ToolUseBlock
from agentscope_teams.tools import ToolEnv, Toolkit, filesystem_tools


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("import os\n\ndef main():\n    return 42\n")
    (root / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'main'\n")
    (root / "README.md").write_text("# Demo\nrun main\n")
    (root / ".git").mkdir()
    (root / ".git" / "config.py").write_text("main = 1\n")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("TOP SECRET main\n")
    return root


async def run(ws: Path, name: str, **arguments: Any) -> ToolResultBlock:
    kit = Toolkit(filesystem_tools())
    env = ToolEnv(workspace=ws, agent_name="tester")
    return await kit.execute(ToolUseBlock(id="c1", name=name, input=arguments), env=env)


async def ok(ws: Path, name: str, **arguments: Any) -> str:
    result = await run(ws, name, **arguments)
    assert not result.is_error, result.output
    return result.output


async def err(ws: Path, name: str, **arguments: Any) -> str:
    result = await run(ws, name, **arguments)
    assert result.is_error, result.output
    return result.output


def test_read_only_flags() -> None:
    flags = {t.name: (t.read_only, t.concurrency_safe) for t in filesystem_tools()}
    assert flags == {
        "read_file": (True, True),
        "write_file": (False, False),
        "edit_file": (False, False),
        "multi_edit": (False, False),
        "list_files": (True, True),
        "glob_files": (True, True),
        "grep_files": (True, True),
        "notebook_edit": (False, False),
    }


async def test_read_file_numbers_lines(ws: Path) -> None:
    out = await ok(ws, "read_file", path="src/main.py")
    assert out.splitlines() == [
        "     1\timport os",
        "     2\t",
        "     3\tdef main():",
        "     4\t    return 42",
    ]
    page = await ok(ws, "Read", path="src/main.py", offset=1, limit=2)
    assert page.splitlines()[:2] == ["     2\t", "     3\tdef main():"]
    assert "offset=3" in page.splitlines()[-1]
    assert "past the end" in await err(ws, "read_file", path="src/main.py", offset=10)


async def test_read_file_errors(ws: Path) -> None:
    assert "does not exist" in await err(ws, "read_file", path="src/nope.py")
    assert "is a directory" in await err(ws, "read_file", path="src")
    (ws / "blob.bin").write_bytes(b"\x89PNG\x00\x00\x01")
    assert "binary file" in await err(ws, "read_file", path="blob.bin")
    os.mkfifo(ws / "pipe")
    assert "not a regular file" in await err(ws, "read_file", path="pipe")
    assert "not a regular file" in await err(ws, "write_file", path="pipe", content="x")
    assert "no matches" in await ok(ws, "grep_files", pattern="x", path="pipe")
    (ws / "empty.txt").write_text("")
    assert await ok(ws, "read_file", path="empty.txt") == "empty.txt is empty"


async def test_write_file_creates_and_updates(ws: Path) -> None:
    out = await ok(ws, "write_file", path="docs/new/guide.md", content="a\nb\n")
    assert out == "created docs/new/guide.md (2 lines, 4 bytes)"
    assert (ws / "docs" / "new" / "guide.md").read_text() == "a\nb\n"
    out = await ok(ws, "Write", path="./docs/new/guide.md", content="c")
    assert out.startswith("updated docs/new/guide.md")
    assert (ws / "docs" / "new" / "guide.md").read_text() == "c"
    assert "is a directory" in await err(ws, "write_file", path="src", content="x")


async def test_edit_file(ws: Path) -> None:
    out = await ok(ws, "edit_file", path="src/main.py", old_string="42", new_string="43")
    assert out == "edited src/main.py: replaced 1 occurrence(s), first at line 4"
    assert (ws / "src" / "main.py").read_text().endswith("return 43\n")
    assert "not found" in await err(
        ws, "edit_file", path="src/main.py", old_string="return 99", new_string="x"
    )
    (ws / "dup.txt").write_text("x = 1\nx = 1\n")
    msg = await err(ws, "edit_file", path="dup.txt", old_string="x = 1", new_string="x = 2")
    assert "occurs 2 times" in msg and "replace_all" in msg
    assert (ws / "dup.txt").read_text() == "x = 1\nx = 1\n"
    await ok(ws, "Edit", path="dup.txt", old_string="x = 1", new_string="y", replace_all=True)
    assert (ws / "dup.txt").read_text() == "y\ny\n"


async def test_edit_keeps_windows_line_endings(ws: Path) -> None:
    (ws / "win.txt").write_bytes(b"one\r\ntwo\r\n")
    await ok(ws, "edit_file", path="win.txt", old_string="one\ntwo", new_string="1\n2")
    assert (ws / "win.txt").read_bytes() == b"1\r\n2\r\n"


async def test_list_files(ws: Path) -> None:
    assert (await ok(ws, "list_files")).splitlines() == [".git/", "src/", "README.md"]
    assert (await ok(ws, "LS", path="src")).splitlines() == ["src/pkg/", "src/main.py"]
    assert "is a file" in await err(ws, "list_files", path="README.md")


async def test_glob_files(ws: Path) -> None:
    assert (await ok(ws, "glob_files", pattern="**/*.py")).splitlines() == [
        "src/main.py",
        "src/pkg/util.py",
    ]
    assert (await ok(ws, "Glob", pattern="*.py", path="src")).splitlines() == ["src/main.py"]
    assert await ok(ws, "glob_files", pattern="*.{md,txt}") == "README.md"
    assert await ok(ws, "glob_files", pattern=".git/*") == ".git/config.py"
    assert "no files match" in await ok(ws, "glob_files", pattern="**/*.rs")
    assert "must be relative" in await err(ws, "glob_files", pattern="../outside/*")


async def test_grep_files(ws: Path) -> None:
    out = await ok(ws, "grep_files", pattern=r"def \w+")
    assert out.splitlines() == ["src/main.py:3: def main():", "src/pkg/util.py:1: def helper():"]
    only_md = await ok(ws, "Grep", pattern="main", glob="*.md")
    assert only_md == "README.md:2: run main"
    (ws / "data.bin").write_bytes(b"main\x00\x01")
    assert "data.bin" not in await ok(ws, "grep_files", pattern="main")
    limited = (await ok(ws, "grep_files", pattern="main", max_results=1)).splitlines()
    assert len(limited) == 2 and "stopped after 1 matches" in limited[1]
    assert "invalid regular expression" in await err(ws, "grep_files", pattern="(")
    assert "no matches" in await ok(ws, "grep_files", pattern="zzz", path="src/main.py")


async def test_dotdot_escape_refused(ws: Path) -> None:
    for name, args in [
        ("read_file", {"path": "../outside/secret.txt"}),
        ("read_file", {"path": "src/../../outside/secret.txt"}),
        ("write_file", {"path": "../evil.txt", "content": "x"}),
        ("list_files", {"path": ".."}),
        ("grep_files", {"pattern": "SECRET", "path": "../outside"}),
    ]:
        assert "outside the workspace" in await err(ws, name, **args)
    assert not (ws.parent / "evil.txt").exists()
    assert await ok(ws, "read_file", path="src/../README.md") == "     1\t# Demo\n     2\trun main"


async def test_absolute_paths(ws: Path) -> None:
    outside = ws.parent / "outside" / "secret.txt"
    assert "outside the workspace" in await err(ws, "read_file", path=str(outside))
    assert "outside the workspace" in await err(ws, "write_file", path="/tmp/x.txt", content="")
    assert "# Demo" in await ok(ws, "read_file", path=str(ws / "README.md"))


async def test_symlinked_file_pointing_outside_refused(ws: Path) -> None:
    os.symlink(ws.parent / "outside" / "secret.txt", ws / "innocent.txt")
    assert "outside the workspace" in await err(ws, "read_file", path="innocent.txt")
    msg = await err(ws, "write_file", path="innocent.txt", content="overwritten")
    assert "outside the workspace" in msg
    assert (ws.parent / "outside" / "secret.txt").read_text() == "TOP SECRET main\n"
    assert "outside the workspace" in await err(
        ws, "edit_file", path="innocent.txt", old_string="TOP", new_string="x"
    )
    assert (await ok(ws, "grep_files", pattern="SECRET")).startswith("no matches")
    assert "innocent" not in await ok(ws, "glob_files", pattern="*.txt")
    assert "innocent" not in await ok(ws, "list_files")


async def test_symlinked_directory_pointing_outside_refused(ws: Path) -> None:
    os.symlink(ws.parent / "outside", ws / "linkdir", target_is_directory=True)
    assert "outside the workspace" in await err(ws, "read_file", path="linkdir/secret.txt")
    assert "outside the workspace" in await err(ws, "list_files", path="linkdir")
    assert "outside the workspace" in await err(
        ws, "write_file", path="linkdir/new.txt", content="x"
    )
    assert not (ws.parent / "outside" / "new.txt").exists()
    assert (await ok(ws, "grep_files", pattern="SECRET")).startswith("no matches")
    assert "no files match" in await ok(ws, "glob_files", pattern="**/secret.txt")


async def test_symlink_inside_workspace_allowed(ws: Path) -> None:
    os.symlink(ws / "src", ws / "code", target_is_directory=True)
    assert "def main" in await ok(ws, "read_file", path="code/main.py")


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": ["# Title\n"]},
        {
            "cell_type": "code",
            "id": "calc",
            "metadata": {},
            "source": ["x = 1\n"],
            "execution_count": 3,
            "outputs": [{"output_type": "stream", "name": "stdout", "text": ["1\n"]}],
        },
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


async def test_notebook_edit_replaces_inserts_and_deletes_cells(ws: Path) -> None:
    import json

    (ws / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    await ok(ws, "notebook_edit", notebook_path="nb.ipynb", cell_id="calc", new_source="x = 2\n")
    await ok(
        ws, "notebook_edit", notebook_path="nb.ipynb", cell_id="intro", new_source="## Notes",
        cell_type="markdown", edit_mode="insert",
    )  # fmt: skip
    await ok(ws, "notebook_edit", notebook_path="nb.ipynb", cell_id="0", edit_mode="delete")
    cells = json.loads((ws / "nb.ipynb").read_text())["cells"]
    assert [c["source"] for c in cells] == [["## Notes"], ["x = 2\n"]]
    assert cells[1]["outputs"] == [] and cells[1]["execution_count"] is None  # stale output gone
    missing = await err(ws, "notebook_edit", notebook_path="nb.ipynb", cell_id="nope")
    assert "no cell 'nope'" in missing
    (ws / "bad.ipynb").write_text("not json")
    assert "not a Jupyter notebook" in await err(ws, "notebook_edit", notebook_path="bad.ipynb")
    outside = await err(ws, "notebook_edit", notebook_path="../x.ipynb", new_source="a")
    assert "outside" in outside or "escape" in outside or "workspace" in outside


async def test_whole_file_rewrites_do_not_follow_a_planted_temp_name(ws: Path) -> None:
    """multi_edit and notebook_edit write a temporary file beside the target; a symlink a
    sandboxed command planted at that name must not carry the write (or a chmod) outside."""
    import json

    secret = ws.parent / "outside" / "secret.txt"
    secret.chmod(0o600)
    (ws / "a.txt").write_text("one\n")
    (ws / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    for name in ("a.txt", "nb.ipynb"):
        (ws / f".{name}.{os.getpid()}.tmp").symlink_to(secret)
    await ok(ws, "multi_edit", path="a.txt", edits=[{"old_string": "one", "new_string": "two"}])
    await ok(ws, "notebook_edit", notebook_path="nb.ipynb", cell_id="calc", new_source="y = 1\n")
    assert secret.read_text() == "TOP SECRET main\n"
    assert secret.stat().st_mode & 0o777 == 0o600
    assert (ws / "a.txt").read_text() == "two\n"
    assert json.loads((ws / "nb.ipynb").read_text())["cells"][1]["source"] == ["y = 1\n"]
    assert not (ws / "a.txt").is_symlink() and not (ws / "nb.ipynb").is_symlink()


async def test_read_file_holds_a_huge_line_only_in_part(ws: Path) -> None:
    """A sandboxed command can write a file of one enormous line; read_file shows its first
    2,000 characters without loading the whole line into the service's memory."""
    import tracemalloc

    size = 30_000_000
    (ws / "big.txt").write_text("first\n" + "a" * size + "\nlast\n")
    tracemalloc.start()
    try:
        out = await ok(ws, "read_file", path="big.txt")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    lines = out.splitlines()
    assert lines[0].endswith("\tfirst") and lines[2].endswith("\tlast")
    assert lines[1] == "     2\t" + "a" * 2000 + " ... [line truncated]"
    assert peak < size // 3  # the line itself was never held whole
