"""``notebook_edit`` (Claude Code's ``NotebookEdit``): replace, insert or delete one cell of a
Jupyter notebook of the workspace.

The notebook is read as JSON (nbformat 4), changed in memory and written back whole through a
temporary file and a rename, so a failed edit leaves the file as it was. Cells are named by their
``id`` (nbformat 4.5) or by their index (``"3"``); a new cell gets a fresh id.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Literal

from ..errors import ToolError
from .base import ToolEnv
from .paths import display, open_regular, replace_file, resolve_in_workspace

__all__ = ["notebook_edit"]

MAX_NOTEBOOK_BYTES = 20_000_000


def _load(root: Path, real: Path, shown: str) -> dict[str, Any]:
    if real == root:
        raise ToolError(f"{shown} is not a notebook file of the workspace")
    with open(open_regular(root, real), "rb") as fh:
        if os.fstat(fh.fileno()).st_size > MAX_NOTEBOOK_BYTES:
            raise ToolError(
                f"{shown} is larger than {MAX_NOTEBOOK_BYTES} bytes; edit it another way"
            )
        raw = fh.read()
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ToolError(f"{shown} is not a Jupyter notebook (invalid JSON: {exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise ToolError(f"{shown} is not a Jupyter notebook (no 'cells' list)")
    return data


def _index(cells: list[Any], cell_id: str | None, shown: str) -> int | None:
    if cell_id is None:
        return None
    for index, cell in enumerate(cells):
        if isinstance(cell, dict) and cell.get("id") == cell_id:
            return index
    if cell_id.isdigit() and int(cell_id) < len(cells):
        return int(cell_id)
    raise ToolError(f"{shown} has no cell {cell_id!r} (it has {len(cells)} cells)")


def _cell(cell_type: str, source: str) -> dict[str, Any]:
    cell: dict[str, Any] = {
        "cell_type": cell_type,
        "id": uuid.uuid4().hex[:8],
        "metadata": {},
        "source": source.splitlines(keepends=True),
    }
    if cell_type == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def notebook_edit(
    notebook_path: str,
    new_source: str = "",
    cell_id: str | None = None,
    cell_type: Literal["code", "markdown"] | None = None,
    edit_mode: Literal["replace", "insert", "delete"] = "replace",
    *,
    env: ToolEnv,
) -> str:
    """Replace, insert or delete one cell of a Jupyter notebook (.ipynb) in the workspace.

    Args:
        notebook_path: The notebook, relative to the workspace root.
        new_source: The cell's new source (replace, insert).
        cell_id: The cell's id, or its index; insert puts the new cell after it (at the start
            when omitted).
        cell_type: code or markdown; needed to insert, optional to replace.
        edit_mode: replace (default), insert or delete.
    """
    real = resolve_in_workspace(env.workspace, notebook_path)
    shown = display(env.workspace, real)
    env.refuse_unreadable(shown)  # its cells are read (and named in errors)
    data = _load(env.workspace, real, shown)
    cells: list[Any] = data["cells"]
    at = _index(cells, cell_id, shown)
    if edit_mode == "insert":
        if cell_type is None:
            raise ToolError("cell_type (code or markdown) is needed to insert a cell")
        position = 0 if at is None else at + 1
        cells.insert(position, _cell(cell_type, new_source))
        done = f"inserted a {cell_type} cell at {position}"
    elif at is None:
        raise ToolError(f"cell_id is needed to {edit_mode} a cell")
    elif edit_mode == "delete":
        del cells[at]
        done = f"deleted cell {at}"
    else:
        cell = cells[at]
        cell["source"] = new_source.splitlines(keepends=True)
        if cell_type is not None and cell_type != cell.get("cell_type"):
            cells[at] = cell = {**_cell(cell_type, new_source), "id": cell.get("id")}
        if cell.get("cell_type") == "code":
            cell.update(execution_count=None, outputs=[])
        done = f"replaced cell {at}"
    replace_file(env.workspace, real, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return f"{shown}: {done} ({len(cells)} cells now)"
