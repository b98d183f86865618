"""Run the installed ``agentscope-teams`` console script against a fresh file store per test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

from agentscope_teams.store.jsonfile import JsonFileStore

CLI = Path(sys.executable).with_name("agentscope-teams")
REPO = Path(__file__).resolve().parents[2]
T = TypeVar("T")


@dataclass
class Cli:
    """The console script with a private HOME and store; ``cli(...)`` adds ``--store URL``."""

    tmp_path: Path

    @property
    def store_dir(self) -> Path:
        return self.tmp_path / "store"

    @property
    def url(self) -> str:
        return f"file://{self.store_dir}"

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSCOPE_TEAMS_")}
        env.update(HOME=str(self.tmp_path / "home"), COLUMNS="200", NO_COLOR="1", TERM="dumb")
        env.update(XDG_CONFIG_HOME=str(self.tmp_path / "home" / ".config"))  # trusted projects
        env.update(extra)
        return env

    def run(
        self, *args: str, cwd: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        """The console script with exactly ``args`` (no ``--store`` added), in ``cwd`` (the repo)."""
        return subprocess.run(
            [str(CLI), *args],
            capture_output=True,
            text=True,
            env=self.env(**env),
            cwd=cwd or REPO,
            timeout=120,
            check=False,
        )

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run(*args, "--store", self.url)

    def with_store(self, body: Callable[[JsonFileStore], Awaitable[T]]) -> T:
        """Run ``body(store)`` on the same store the command line uses."""

        async def runner() -> T:
            async with JsonFileStore(self.store_dir) as store:
                return await body(store)

        return anyio.run(runner)


@pytest.fixture(scope="session", autouse=True)
def _console_script_installed() -> None:
    if not CLI.exists():
        pytest.fail(f"{CLI} is missing: install the package with `pip install -e .`")


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def interruptible() -> None:
    """``preexec_fn`` of a CLI process a test sends SIGINT: Ctrl-C's default action, even when
    this run was started where SIGINT is ignored (a background job of a shell without job
    control passes the ignore on, and Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single ``error: ...`` line of a failed command (asserting there is nothing else)."""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]
