"""A script that never closes its agent still exits quietly: no "Task was destroyed but it is
pending!", no "Event loop is closed", no traceback (``metering()`` printed the first in 2 of 4 runs).

Each case runs ``exit_unclosed.py`` as a real subprocess several times, since the leak showed only
on some runs: the interpreter's exit order decides whether a pending task is reported.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import pytest

from agentscope_teams import RuntimeContext
from agentscope_teams.store import store_from_url
from agentscope_teams.teams import LocalTeamClient

from ..backends import REDIS_URL
from ..conftest import require_service

SCRIPT = Path(__file__).with_name("exit_unclosed.py")
RUNS = 3
LEAKS = ("Task was destroyed", "Event loop is closed", "Traceback", "never awaited")


def _run(mode: str, url: str, workspace: Path, org: str = "") -> subprocess.CompletedProcess[str]:
    org = org or "unclosed-" + uuid.uuid4().hex[:12]  # a key prefix of its own on a shared server
    cmd = [sys.executable, str(SCRIPT), mode, url, org, str(workspace)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


def _assert_quiet(mode: str, url: str, workspace: Path, reply: str) -> None:
    for _ in range(RUNS):
        done = _run(mode, url, workspace)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[0] == reply, done.stdout
        assert not [leak for leak in LEAKS if leak in done.stderr], done.stderr


@pytest.mark.parametrize(
    ("mode", "reply"),
    [("call", "one"), ("team", "done"), ("metering", "done"), ("sync", "done")],
)
def test_an_unclosed_agent_on_the_file_store_exits_quietly(
    mode: str, reply: str, tmp_path: Path
) -> None:
    """A plain reply, a team whose member is mid-call, the same under ``metering()``, and
    ``call_sync``: every run exits 0 with nothing on stderr."""
    _assert_quiet(mode, f"file://{tmp_path / 'store'}", tmp_path / "ws", reply)


@pytest.mark.parametrize(("mode", "reply"), [("team", "done"), ("metering", "done")])
def test_an_unclosed_agent_on_redis_exits_quietly(mode: str, reply: str, tmp_path: Path) -> None:
    """The same on Redis, whose store keeps a pub/sub reader task and a connection pool."""
    require_service("redis")
    _assert_quiet(mode, REDIS_URL, tmp_path / "ws", reply)


def test_one_agent_serves_two_event_loops_on_redis(tmp_path: Path) -> None:
    """A script that calls ``anyio.run`` twice with one agent: the second loop gets connections of
    its own (it used to reuse the first loop's and die with "Event loop is closed")."""
    require_service("redis")
    for _ in range(RUNS):
        done = _run("twice", REDIS_URL, tmp_path / "ws")
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["one", "two"], done.stdout + done.stderr
        assert not [leak for leak in LEAKS if leak in done.stderr], done.stderr


def test_a_redis_store_is_built_outside_an_event_loop(tmp_path: Path) -> None:
    """``HarnessAgent(..., store="redis://...")`` at module level, before any loop runs (it
    raised NoEventLoopError from the signal subscriber)."""
    require_service("redis")
    done = _run("call", REDIS_URL, tmp_path / "ws")
    assert done.returncode == 0 and done.stdout.splitlines()[0] == "one", done.stderr


def test_call_sync_closes_the_agent_at_exit(tmp_path: Path) -> None:
    """``call_sync`` without ``close_sync``: at interpreter exit the agent is closed on its own
    loop, so the member that was mid-call is stopped and marked so in the store (not left
    ``running`` for a lease to expire)."""
    url = f"file://{tmp_path / 'store'}"
    done = _run("sync", url, tmp_path / "ws", org="acme")
    assert done.returncode == 0 and not done.stderr, done.stderr

    async def members() -> list[str]:
        async with store_from_url(url) as store:
            ctx = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
            [team] = await LocalTeamClient(store, ctx).list_teams()
            return [m.status.value for m in team.members]

    assert anyio.run(members) == ["stopped"]
