from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ..cli.conftest import _console_script_installed, cli  # noqa: F401  (the console script)
from .http_server import Server, serving


@pytest.fixture(autouse=True)
def private_trust_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test remembers trusted projects in a folder of its own, never the user's."""
    folder = tmp_path / "user-config"
    monkeypatch.setenv("AGENTSCOPE_TEAMS_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture
def server() -> Iterator[Server]:
    """A loopback HTTP server for http hooks (:mod:`.http_server`)."""
    with serving() as state:
        yield state
