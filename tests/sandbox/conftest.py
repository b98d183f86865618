"""Fixtures of the sandbox tests: a real bubblewrap sandbox (skipped with the reason when
bubblewrap cannot run here, failed instead under AGENTSCOPE_TEAMS_REQUIRE_SERVICES=1), the
unsafe host backend as the control, and workspaces laid out as an agent lays them out."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.sandbox import BubblewrapSandbox, SandboxLimits, UnsafeHostSandbox

from ..backends import REQUIRE_SERVICES


def require_bwrap(**options: object) -> BubblewrapSandbox:
    try:
        return BubblewrapSandbox(**options)  # type: ignore[arg-type]
    except ConfigurationError as exc:
        msg = f"bubblewrap cannot run here: {exc}"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " and AGENTSCOPE_TEAMS_REQUIRE_SERVICES=1 forbids skipping")
        pytest.skip(msg)


@pytest.fixture
def bwrap() -> BubblewrapSandbox:
    return require_bwrap()


@pytest.fixture
def unsafe() -> UnsafeHostSandbox:
    return UnsafeHostSandbox()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "root" / "o:" / "u:alice" / "s:one"
    ws.mkdir(parents=True)
    return ws.resolve()


@pytest.fixture
def other_session(workspace: Path) -> Path:
    """A second session's workspace under the same root, holding a secret."""
    other = workspace.parent / "s:two"
    other.mkdir()
    (other / "secret.txt").write_text("the other session's secret\n")
    return other


def processes_with(marker: str) -> list[int]:
    """PIDs of host processes whose command line contains ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                cmdline = fh.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and int(entry) != os.getpid():
            found.append(int(entry))
    return found


@pytest.fixture
def reap_marked() -> Iterator[list[str]]:
    """Markers of processes a control test leaves behind on purpose; killed by PID afterwards."""
    markers: list[str] = []
    yield markers
    for marker in markers:
        for pid in processes_with(marker):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def exists(path: str | Path) -> bool:
    """Whether ``path`` exists on the host (a plain function: async tests call it)."""
    return os.path.lexists(path)


SMALL = SandboxLimits(timeout=20)
