"""The real AgentScope 2.0.11, installed once in its own virtualenv and reused across runs.

The venv lives in ``~/.cache/agentscope-teams/anchor-venv-<hash>`` (``$AGENTSCOPE_TEAMS_ANCHOR_CACHE``
overrides the directory), keyed by the requirements file and the Python version, so a change of
either builds a new one. A file lock makes parallel test processes build it once; ``.ready`` marks a
finished build (a half-built venv from an interrupted run is rebuilt).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "requirements.txt"
WRITER = HERE / "write_sessions.py"


class AnchorUnavailable(RuntimeError):
    """The AgentScope venv could not be built (no network, no wheel, ...)."""


def _venv_dir() -> Path:
    key = REQUIREMENTS.read_bytes() + sys.version.encode()
    digest = hashlib.sha256(key).hexdigest()[:16]
    root = os.environ.get("AGENTSCOPE_TEAMS_ANCHOR_CACHE") or "~/.cache/agentscope-teams"
    return Path(root).expanduser() / f"anchor-venv-{digest}"


def anchor_python() -> Path:
    """The interpreter of the AgentScope venv, built first if needed."""
    venv = _venv_dir()
    python = venv / "bin" / "python"
    if (venv / ".ready").exists():
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (venv / ".ready").exists():
            return python
        shutil.rmtree(venv, ignore_errors=True)
        for cmd in (
            [sys.executable, "-m", "venv", str(venv)],
            [str(python), "-m", "pip", "install", "-q", "-r", str(REQUIREMENTS)],
        ):
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, check=False)
            if done.returncode != 0:
                raise AnchorUnavailable(
                    f"`{' '.join(cmd)}` failed ({done.returncode}): {done.stderr[-2000:]}"
                )
        (venv / ".ready").write_text("ok\n")
    return python


def write_sessions(python: Path, user: str, *target: str) -> dict[str, Any]:
    """Run the writer under AgentScope: the sessions it stored, as AgentScope reads them back."""
    done = subprocess.run(
        [str(python), str(WRITER), user, *target],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"AgentScope writer failed: {done.stderr[-3000:]}")
    return dict(json.loads(done.stdout)["sessions"])
