"""Limits of a sandboxed command: nothing it started outlives the call, the timeout kills the whole
tree, the output is capped with a note, the process count and memory are bounded."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path

import pytest

from agentscope_teams.sandbox import BubblewrapSandbox, SandboxLimits, UnsafeHostSandbox, bubblewrap

from .conftest import processes_with


def _marker() -> str:
    """A unique sleep duration: the marker of the processes of one test in /proc."""
    return f"{900000 + uuid.uuid4().int % 99999}.{uuid.uuid4().int % 997}"


async def test_background_children_and_daemons_die_with_the_call(
    bwrap: BubblewrapSandbox,
    unsafe: UnsafeHostSandbox,
    workspace: Path,
    reap_marked: list[str],
) -> None:
    bg, daemon = _marker(), _marker()
    command = (
        f"sleep {bg} & "
        f"( setsid sh -c 'sleep {daemon}' </dev/null >/dev/null 2>&1 & ) ; "
        f"sleep 0.2; ps -eo args | grep -c '^sleep'"
    )
    result = await bwrap.run(command, workspace)
    assert result.output.strip() == "2", result.output  # both were running inside
    assert processes_with(bg) == [] and processes_with(daemon) == []
    # control: on the host, the double-forked setsid daemon escapes the process group
    reap_marked.append(daemon)
    await unsafe.run(command.replace("; ps -eo args | grep -c '^sleep'", ""), workspace)
    assert processes_with(daemon) != []


async def test_the_timeout_kills_the_command_and_its_children(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    marker = _marker()
    limits = SandboxLimits(timeout=1)
    result = await bwrap.run(
        f"echo started; sleep {marker} & sleep {marker}", workspace, limits=limits
    )
    assert result.timed_out and result.exit_code < 0
    assert result.output == "started\n"
    assert processes_with(marker) == []


async def test_three_megabytes_of_output_are_capped_with_a_note(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    command = "head -c 3000000 /dev/zero | tr '\\0' a; echo; echo THE-END"
    result = await bwrap.run(command, workspace)
    assert result.exit_code == 0
    assert result.omitted_bytes == 3_000_000 + 1 + 8 - 30_000
    assert f"[... {result.omitted_bytes:,} bytes of output omitted here ...]" in result.output
    assert result.output.startswith("a" * 15_000)
    assert result.output.endswith("THE-END\n")  # the tail is kept
    assert len(result.output) < 30_100


FORKER = """python3 -c '
import os, time
started = 0
for _ in range(60):
    try:
        pid = os.fork()
    except OSError:
        continue
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    started += 1
print(started)
'"""


async def test_the_process_count_is_bounded(bwrap: BubblewrapSandbox, workspace: Path) -> None:
    """60 forks, each child staying alive: with at most 20 processes most of them fail."""
    bounded = await bwrap.run(FORKER, workspace, limits=SandboxLimits(max_processes=20))
    assert int(bounded.output) < 20, bounded.output
    control = await bwrap.run(FORKER, workspace, limits=SandboxLimits(max_processes=None))
    assert int(control.output) == 60


async def test_a_real_fork_bomb_ends_at_its_timeout(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    limits = SandboxLimits(timeout=2, max_processes=32)
    result = await bwrap.run("b() { b | b & }; b; sleep 1", workspace, limits=limits)
    assert "fork: retry: Resource temporarily unavailable" in result.output  # it hit the bound
    assert processes_with("b() { b | b & }; b") == []  # and nothing of it is left


async def test_memory_is_bounded(bwrap: BubblewrapSandbox, workspace: Path) -> None:
    grab = "python3 -c 'x = bytearray(600 * 1024 * 1024); print(len(x))'"
    small = await bwrap.run(grab, workspace, limits=SandboxLimits(max_memory_bytes=256 * 2**20))
    assert small.exit_code != 0 and "MemoryError" in small.output
    big = await bwrap.run(grab, workspace, limits=SandboxLimits(max_memory_bytes=2 * 2**30))
    assert big.exit_code == 0 and big.output.strip() == str(600 * 1024 * 1024)


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("setpriv") is None,
    reason="emulating a non-root service needs root and setpriv",
)
async def test_as_a_non_root_service_rlimit_nproc_bounds_the_sandbox(
    bwrap: BubblewrapSandbox, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The recommended deployment: bubblewrap started by an unprivileged user, no cgroup; the
    limit set inside the sandbox's user namespace counts the sandbox's processes."""
    wrapper = tmp_path / "bwrap-as-nobody"
    wrapper.write_text(
        f'#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups {bwrap.bwrap} "$@"\n'
    )
    wrapper.chmod(0o755)
    monkeypatch.setattr(bubblewrap, "pids_parent", lambda: None)
    monkeypatch.setattr(bubblewrap, "_probe", lambda sandbox: None)
    monkeypatch.setattr(bubblewrap.os, "geteuid", lambda: 65534)
    nobody = BubblewrapSandbox(bwrap=str(wrapper))
    workspace = _shared_dir()
    try:
        who = await nobody.run("id -u", workspace)
        assert who.output.strip() == "65534", who.output
        shm = await nobody.run("echo x > /dev/shm/y && echo x > /tmp/y && echo ok", workspace)
        assert shm.output.strip() == "ok", shm.output  # its private /dev/shm and /tmp are its own
        bounded = await nobody.run(FORKER, workspace, limits=SandboxLimits(max_processes=20))
        assert int(bounded.output) < 20, bounded.output
        control = await nobody.run(FORKER, workspace, limits=SandboxLimits(max_processes=None))
        assert int(control.output) == 60
    finally:
        shutil.rmtree(workspace)


def _shared_dir() -> Path:
    """A directory below /tmp that the unprivileged user may enter and write."""
    path = Path(tempfile.mkdtemp(prefix="agentscope-nobody-", dir="/tmp"))
    path.chmod(0o777)
    return path


async def test_memory_backed_dev_and_dev_shm_are_bounded_like_tmp(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    """/dev and /dev/shm are tmpfs (memory) too: a command may not fill the host's memory through
    them once /tmp is bounded. /dev/shm holds at most tmp_bytes; /dev takes no new files."""
    limits = SandboxLimits(tmp_bytes=1024 * 1024)
    fill = "head -c 4M /dev/zero > {0} && echo WROTE {0}; rm -f {0}"
    for path in ("/tmp/x", "/dev/shm/x", "/dev/x"):
        result = await bwrap.run(fill.format(path), workspace, limits=limits)
        assert f"WROTE {path}" not in result.output, result.output
    shm = await bwrap.run(
        "head -c 100K /dev/zero > /dev/shm/x && echo ok", workspace, limits=limits
    )
    assert shm.output.strip() == "ok"  # shared memory still works within the bound
    devices = await bwrap.run("echo hi > /dev/null && head -c 3 /dev/zero | wc -c", workspace)
    assert devices.output.strip() == "3"
