"""Choosing a sandbox: bubblewrap is never replaced by running unsandboxed; without it (missing,
unusable, not Linux, no way to bound processes) construction fails naming the Debian package;
the unsafe backend warns; ``--sandbox`` on the command line."""

from __future__ import annotations

import argparse
import logging
import os
import stat
import sys
from pathlib import Path

import pytest

from agentscope_teams.cli import sandbox_option as cli_option
from agentscope_teams.errors import CommandError, ConfigurationError
from agentscope_teams.sandbox import (
    BubblewrapSandbox,
    SandboxLimits,
    UnsafeHostSandbox,
    bubblewrap,
    resolve_sandbox,
)


def test_missing_bubblewrap_names_the_debian_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bubblewrap, "find_bwrap", lambda: None)
    with pytest.raises(ConfigurationError, match="Debian package bubblewrap"):
        BubblewrapSandbox()


def test_an_unusable_bubblewrap_is_found_by_the_probe(tmp_path: Path) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    with pytest.raises(ConfigurationError) as caught:
        BubblewrapSandbox(bwrap=str(fake))
    assert "setting up uid map" in str(caught.value) and "bubblewrap" in str(caught.value)


def test_not_linux_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    with pytest.raises(ConfigurationError, match="needs Linux"):
        BubblewrapSandbox()


@pytest.mark.skipif(os.geteuid() != 0, reason="RLIMIT_NPROC binds non-root users")
def test_root_without_a_pids_cgroup_cannot_bound_processes(
    monkeypatch: pytest.MonkeyPatch, bwrap: BubblewrapSandbox
) -> None:
    monkeypatch.setattr(bubblewrap, "pids_parent", lambda: None)
    with pytest.raises(ConfigurationError, match="RLIMIT_NPROC does not bind"):
        BubblewrapSandbox()
    BubblewrapSandbox(limits=SandboxLimits(max_processes=None))  # the operator's explicit choice


def test_names_resolve_and_unknown_names_are_refused() -> None:
    assert resolve_sandbox(None) is None and resolve_sandbox("none") is None
    assert isinstance(resolve_sandbox("unsafe-host"), UnsafeHostSandbox)
    with pytest.raises(ConfigurationError, match="unknown sandbox 'docker'"):
        resolve_sandbox("docker")


def test_the_unsafe_backend_warns_loudly(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        UnsafeHostSandbox()
    assert "WITHOUT a sandbox" in caplog.text


def test_the_command_line_option(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_option, "default_sandbox", lambda: (None, "bwrap is missing; more"))
    assert cli_option.sandbox_option(argparse.Namespace(sandbox=None)) is None
    assert "note: the bash tool is not offered (bwrap is missing)" in capsys.readouterr().err
    assert cli_option.sandbox_option(argparse.Namespace(sandbox="none")) is None
    monkeypatch.setattr(bubblewrap, "find_bwrap", lambda: None)
    with pytest.raises(CommandError, match=r"--sandbox bubblewrap: .*bubblewrap"):
        cli_option.sandbox_option(argparse.Namespace(sandbox="bubblewrap"))
    unsafe = cli_option.sandbox_option(argparse.Namespace(sandbox="unsafe-host"))
    assert isinstance(unsafe, UnsafeHostSandbox)
    assert "WARNING: --sandbox unsafe-host" in capsys.readouterr().err
