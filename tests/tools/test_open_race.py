"""File tools open what they checked: a path component swapped for a symlink between the
workspace check and the open (as a background command running beside the call could do) makes
the call fail instead of reading or writing outside the workspace.

The swap is made deterministically, right after the check (``resolve_in_workspace`` wrapped),
not by racing a thread."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.message import ToolResultBlock, ToolUseBlock
from agentscope_teams.tools import ToolEnv, Toolkit, filesystem, filesystem_tools, notebook

NOTEBOOK = {
    "cells": [{"cell_type": "code", "id": "c", "metadata": {}, "source": ["x = 1\n"]}],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    for folder, word in ((root / "sub", "inside"), (outside, "outside")):
        (folder / "a.txt").write_text(f"{word} one\n")
        (folder / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    return root


def swap_after_check(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """Run ``swap`` once, just after the file tools have checked a path."""
    checked = filesystem.resolve_in_workspace
    done: list[bool] = []

    def check_then_swap(root: Path, path: str) -> Path:
        real = checked(root, path)
        if not done:
            done.append(True)
            swap()
        return real

    monkeypatch.setattr(filesystem, "resolve_in_workspace", check_then_swap)
    monkeypatch.setattr(notebook, "resolve_in_workspace", check_then_swap)


def dir_to_symlink(ws: Path) -> Callable[[], None]:
    def swap() -> None:
        (ws / "sub").rename(ws / "sub.moved")
        (ws / "sub").symlink_to(ws.parent / "outside", target_is_directory=True)

    return swap


def file_to_symlink(ws: Path) -> Callable[[], None]:
    def swap() -> None:
        (ws / "sub" / "a.txt").unlink()
        (ws / "sub" / "a.txt").symlink_to(ws.parent / "outside" / "a.txt")

    return swap


async def run(ws: Path, name: str, **arguments: Any) -> ToolResultBlock:
    call = ToolUseBlock(id="c1", name=name, input=arguments)
    return await Toolkit(filesystem_tools()).execute(call, env=ToolEnv(workspace=ws))


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"path": "sub/a.txt"}),
    ("write_file", {"path": "sub/a.txt", "content": "pwned\n"}),
    ("write_file", {"path": "sub/new.txt", "content": "pwned\n"}),
    ("edit_file", {"path": "sub/a.txt", "old_string": "one", "new_string": "pwned"}),
    ("multi_edit", {"path": "sub/a.txt", "edits": [{"old_string": "one", "new_string": "pwned"}]}),
    ("notebook_edit", {"notebook_path": "sub/nb.ipynb", "cell_id": "c", "new_source": "pwned"}),
]


def outside_untouched(ws: Path) -> None:
    outside = ws.parent / "outside"
    assert sorted(p.name for p in outside.iterdir()) == ["a.txt", "nb.ipynb"]
    assert (outside / "a.txt").read_text() == "outside one\n"
    assert json.loads((outside / "nb.ipynb").read_text()) == NOTEBOOK


@pytest.mark.parametrize(
    ("name", "arguments"), CALLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CALLS)]
)
async def test_a_directory_swapped_for_a_symlink_after_the_check_is_refused(
    ws: Path, monkeypatch: pytest.MonkeyPatch, name: str, arguments: dict[str, Any]
) -> None:
    swap_after_check(monkeypatch, dir_to_symlink(ws))
    result = await run(ws, name, **arguments)
    assert result.is_error, result.output
    assert "'sub' on its path is not a directory of the workspace" in result.output
    assert "outside one" not in result.output
    outside_untouched(ws)


@pytest.mark.parametrize(
    ("name", "arguments"), CALLS[:2] + CALLS[3:5], ids=["read", "write", "edit", "multi_edit"]
)
async def test_a_file_swapped_for_a_symlink_after_the_check_is_refused(
    ws: Path, monkeypatch: pytest.MonkeyPatch, name: str, arguments: dict[str, Any]
) -> None:
    swap_after_check(monkeypatch, file_to_symlink(ws))
    result = await run(ws, name, **arguments)
    assert result.is_error, result.output
    assert "sub/a.txt was replaced by a symlink since the path was checked" in result.output
    assert "outside one" not in result.output
    outside_untouched(ws)


async def test_without_a_swap_the_same_calls_work(ws: Path) -> None:
    """Control: the calls above succeed on an unchanged workspace (and through a symlink that
    stays inside it)."""
    (ws / "link").symlink_to(ws / "sub", target_is_directory=True)
    for name, arguments in CALLS:
        (ws / "sub" / "a.txt").write_text("inside one\n")
        result = await run(ws, name, **arguments)
        assert not result.is_error, (name, result.output)
    assert (ws / "sub" / "new.txt").read_text() == "pwned\n"
    assert not (await run(ws, "read_file", path="link/a.txt")).is_error
    outside_untouched(ws)


def guard_that_swaps(asked: str, swap: Callable[[], None]) -> Callable[[str], str | None]:
    """A read guard refusing nothing that runs ``swap`` when first asked about ``asked``: the
    listing and searching tools ask it about a path after checking it and before opening it."""
    done: list[bool] = []

    def guard(path: str) -> str | None:
        if path == asked and not done:
            done.append(True)
            swap()
        return None

    return guard


async def run_guarded(
    ws: Path, guard: Callable[[str], str | None], name: str, **arguments: Any
) -> str:
    call = ToolUseBlock(id="c1", name=name, input=arguments)
    env = ToolEnv(workspace=ws, read_guard=guard)
    result = await Toolkit(filesystem_tools()).execute(call, env=env)
    return result.output


@pytest.mark.parametrize(
    ("asked", "name", "arguments"),
    [
        ("sub/a.txt", "grep_files", {"pattern": "one"}),  # found by the walk, then swapped
        ("sub", "grep_files", {"pattern": "one"}),  # a directory, before the walk enters it
        ("sub", "glob_files", {"pattern": "**/*"}),
        ("sub", "list_files", {"path": "sub"}),  # the directory listed, once checked
    ],
)
async def test_listing_and_searching_never_follow_a_directory_swapped_after_the_check(
    ws: Path, asked: str, name: str, arguments: dict[str, Any]
) -> None:
    (ws.parent / "outside" / "exfil.txt").write_text("outside one\n")
    out = await run_guarded(ws, guard_that_swaps(asked, dir_to_symlink(ws)), name, **arguments)
    assert (ws / "sub").is_symlink()  # the swap happened
    assert "outside one" not in out and "exfil" not in out, out
