"""The generated reference pages (docs/reference/) match the code they are generated from."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_generated_reference_pages_are_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "reference" / "generate.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_every_spec_key_has_prose_in_the_reference() -> None:
    page = (ROOT / "docs" / "reference" / "specs.md").read_text(encoding="utf-8")
    from agentscope_teams.subagents._fields import SPEC_KEYS

    for key in SPEC_KEYS:
        assert f"| `{key}` |" in page, key
