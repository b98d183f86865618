from __future__ import annotations

from pathlib import Path

import pytest

from ..cli.conftest import _console_script_installed, cli  # noqa: F401  (the console script)


@pytest.fixture(autouse=True)
def private_trust_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test remembers trusted projects in a folder of its own, never the user's."""
    folder = tmp_path / "user-config"
    monkeypatch.setenv("AGENTSCOPE_TEAMS_CONFIG_DIR", str(folder))
    return folder
