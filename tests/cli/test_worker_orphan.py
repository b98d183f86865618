"""``worker --exit-with-parent``: a worker whose starter is killed stops by itself (the workers of
``review --workers N`` are started so), and one started without the flag keeps running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

STARTER = textwrap.dedent(
    """
    import subprocess, sys, time
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "--store", sys.argv[1], "worker",
           "--specs", sys.argv[2], "--model", "offline", "--poll", "0.2", *sys.argv[4:]]
    with open(sys.argv[3], "wb") as log:
        worker = subprocess.Popen(cmd, stdout=log, stderr=log)
    print(worker.pid, flush=True)
    time.sleep(600)
    """
)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs (an exited process nobody reaped yet is a zombie: not running)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] != "Z"


def _start(tmp_path: Path, name: str, *flags: str) -> tuple[subprocess.Popen[str], int, Path]:
    log = tmp_path / f"{name}.log"
    store = f"file://{tmp_path / 'store'}"
    args = [store, str(ROOT / "specs"), str(log), *flags]
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, *args], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert starter.stdout is not None
    worker = int(starter.stdout.readline())
    deadline = time.monotonic() + 60
    while "worker serving" not in log.read_text(errors="replace"):  # it is up
        assert time.monotonic() < deadline and _running(worker), log.read_text(errors="replace")
        time.sleep(0.1)
    return starter, worker, log


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_worker_stops_when_its_starter_is_killed(tmp_path: Path) -> None:
    with_flag = _start(tmp_path, "with", "--exit-with-parent")
    without = _start(tmp_path, "without")
    try:
        for starter, _, _ in (with_flag, without):
            starter.send_signal(signal.SIGKILL)
            starter.wait(timeout=10)
        deadline = time.monotonic() + 30
        while _running(with_flag[1]) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _running(with_flag[1]), with_flag[2].read_text(errors="replace")
        assert "is gone: stopping" in with_flag[2].read_text(errors="replace")
        assert _running(without[1])  # without the flag it is left behind, as before
    finally:
        for _, pid, _ in (with_flag, without):
            if _running(pid):
                os.kill(pid, signal.SIGKILL)
