"""The README's code example runs as written and prints what its comments promise."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs(tmp_path: Path) -> None:
    block = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert block is not None, "the README lost its code example"
    code = block.group(1)
    assert len(code.strip().splitlines()) <= 22
    script = tmp_path / "example.py"
    script.write_text(code)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "The reviewer says: LGTM" in done.stdout
    assert "messages saved for alice/s1" in done.stdout


def test_readme_first_screen_has_the_two_commands() -> None:
    text = README.read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert "agentscope-teams review examples/sample_project" in blocks[0]
    assert "pytest" in blocks[1]
    assert text.index(blocks[1]) < 2500


def test_readme_structured_output_example_runs(tmp_path: Path) -> None:
    section = README.read_text().split("## Structured output", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None, "the README lost its structured-output example"
    script = tmp_path / "structured.py"
    script.write_text(block.group(1))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "10"
