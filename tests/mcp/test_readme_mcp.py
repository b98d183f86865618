"""The README's "MCP tools" example runs as written against the real time server."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_mcp_example_runs(tmp_path: Path) -> None:
    text = README.read_text()
    section = text[text.index("## MCP tools") :]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None, "the MCP tools section lost its example"
    script = tmp_path / "mcp_example.py"
    script.write_text(block.group(1))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It is evening in Tokyo."
