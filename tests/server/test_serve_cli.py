"""``agentscope-teams serve``: the real console script, its printed token and a clean stop."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from agentscope_teams.cli import main

CLI = Path(sys.executable).with_name("agentscope-teams")


def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTSCOPE_TEAMS_")}
    return {**clean, "HOME": str(tmp_path / "home"), "NO_COLOR": "1"}


@contextmanager
def running(tmp_path: Path, *args: str) -> Iterator[tuple[subprocess.Popen[str], list[str]]]:
    proc = subprocess.Popen(
        [str(CLI), "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(tmp_path),
    )
    lines: list[str] = []
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any("dashboard:" in x for x in lines):
            line = proc.stdout.readline()
            if not line:
                raise AssertionError(f"serve exited: {proc.wait()} {proc.stderr.read()}")  # type: ignore[union-attr]
            lines.append(line.rstrip("\n"))
        yield proc, lines
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_serve_prints_an_operator_token_that_works(tmp_path: Path) -> None:
    store = f"file://{tmp_path / 'store'}"
    with running(tmp_path, "--store", store, "--user", "alice", "--org", "acme") as (proc, out):
        base = re.search(r"on (http://\S+)", out[0])
        assert base is not None, out
        token = next(line.strip() for line in out if line.strip().startswith("ast_"))
        assert any(line == f"dashboard: {base[1]}/?token={token}" for line in out)
        headers = {"Authorization": f"Bearer {token}"}
        me = httpx.get(base[1] + "/api/whoami", headers=headers).json()
        assert (me["kind"], me["user_id"], me["org_id"]) == ("operator", "alice", "acme")
        assert httpx.get(base[1] + "/api/teams").status_code == 401
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) in (0, 130)


def test_create_operator_token_then_serve(tmp_path: Path) -> None:
    store = f"file://{tmp_path / 'store'}"
    made = subprocess.run(
        [str(CLI), "serve", "--store", store, "--create-operator-token", "--user", "bob"],
        capture_output=True,
        text=True,
        env=env(tmp_path),
        timeout=60,
        check=True,
    )
    token = made.stdout.strip().splitlines()[-1]
    assert token.startswith("ast_") and "no expiry" in made.stdout
    with running(tmp_path, "--store", store, "--user", "carol") as (_, out):
        base = re.search(r"on (http://\S+)", out[0])
        assert base is not None
        r = httpx.get(base[1] + "/api/whoami", headers={"Authorization": f"Bearer {token}"})
        assert r.json()["user_id"] == "bob"


def test_serve_needs_a_store_and_a_free_port(tmp_path: Path) -> None:
    r = subprocess.run(
        [str(CLI), "serve"], capture_output=True, text=True, env=env(tmp_path), timeout=60
    )
    assert r.returncode == 2 and "--store URL is required" in r.stderr
    store = f"file://{tmp_path / 'store'}"
    with running(tmp_path, "--store", store) as (_, out):
        port = re.search(r":(\d+) ", out[0])
        assert port is not None
        busy = subprocess.run(
            [str(CLI), "serve", "--store", store, "--port", port[1]],
            capture_output=True,
            text=True,
            env=env(tmp_path),
            timeout=60,
        )
        assert busy.returncode == 1 and f"cannot listen on 127.0.0.1:{port[1]}" in busy.stderr


def test_serve_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--help"]) == 0
    out = capsys.readouterr().out
    assert "examples:\n  agentscope-teams serve" in out
    for option in ("--store URL", "--host", "--port", "--create-operator-token", "--token-ttl"):
        assert option in out
