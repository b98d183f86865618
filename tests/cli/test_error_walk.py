"""The command line walked with bad input, as real ``agentscope-teams`` processes: bad store URLs,
missing extras (hidden by a ``sitecustomize``), unknown options and bad files. Every one ends with
a non-zero exit, no traceback, nothing "unexpected", and a message naming what was wrong."""

from __future__ import annotations

import os
import socket
import textwrap
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from .conftest import Cli

REDIS = os.environ.get("AGENTSCOPE_TEAMS_REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES = os.environ.get("AGENTSCOPE_TEAMS_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/x")

#: Makes the modules named in $HIDE_MODULES impossible to import, as if their extra were missing.
SITECUSTOMIZE = """
import os, sys

class _Hide:
    names = set(filter(None, os.environ.get("HIDE_MODULES", "").split(",")))

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _Hide())
"""


def _reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=2):
            return True
    except OSError:
        return False


def _base(url: str) -> str:
    """``url`` without its path and query: ``scheme://netloc``."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


#: (case id, argv, what the message must name, modules to hide, service the case needs)
CASES = [
    # bad store URLs
    ("redis-db-out-of-range", ["--store", f"{_base(REDIS)}/99", "sessions", "list"],
     "/99", "", REDIS),
    ("redis-unknown-query", ["--store", f"{_base(REDIS)}/0?frobnicate=1", "sessions", "list"],
     "frobnicate", "", REDIS),
    ("postgres-unknown-query", ["--store", f"{POSTGRES}?frobnicate=1", "team", "list"],
     "frobnicate", "", POSTGRES),
    ("unknown-scheme", ["--store", "ftp://host/x", "sessions", "list"], "ftp://host/x", "", None),
    ("file-url-with-host", ["--store", "file://store", "sessions", "list"], "file://store", "",
     None),
    ("redis-refused", ["--store", "redis://127.0.0.1:1/0", "sessions", "list"],
     "127.0.0.1:1", "", None),
    # missing extras
    ("serve-without-server-extra", ["serve", "--store", "memory://", "--port", "0"],
     "agentscope-teams[server]", "uvicorn", None),
    ("redis-without-redis-extra", ["--store", "redis://127.0.0.1:1/0", "sessions", "list"],
     "agentscope-teams[redis]", "redis", None),
    ("postgres-without-extra", ["--store", "postgresql://u@127.0.0.1:1/x", "sessions", "list"],
     "agentscope-teams[postgres]", "asyncpg", None),
    ("mcp-config-without-mcp", ["run", "--model", "scripted:{script}", "--mcp-config",
     "{mcp}", "hi"], "agentscope-teams[mcp]", "mcp", None),
    # unknown options and commands
    ("unknown-option", ["run", "--frobnicate", "hi"], "--frobnicate", "", None),
    ("unknown-command", ["frobnicate"], "frobnicate", "", None),
    ("unknown-model", ["run", "--model", "nope:x", "hi"], "nope:x", "", None),
    ("bad-python-model", ["worker", "--store", "memory://", "--specs", "{specs}", "--model",
     "python:no_such_mod:x"],
     "no_such_mod", "", None),
    ("bad-sandbox", ["run", "--model", "scripted:{script}", "--sandbox", "frob", "hi"],
     "frob", "", None),
    # bad files
    ("missing-script", ["run", "--model", "scripted:/no/such/turns.yaml", "hi"],
     "/no/such/turns.yaml", "", None),
    ("broken-script", ["run", "--model", "scripted:{broken}", "hi"], "broken.yaml", "", None),
    ("missing-specs", ["run", "--specs", "/no/such/specs", "--model", "scripted:{script}", "hi"],
     "/no/such/specs", "", None),
    ("missing-mcp-config", ["run", "--model", "scripted:{script}", "--mcp-config",
     "/no/such/.mcp.json", "hi"], "/no/such/.mcp.json", "", None),
    ("specs-check-missing", ["specs", "check", "/no/such/specs"], "/no/such/specs", "", None),
    # worker
    ("worker-unknown-scheme", ["worker", "--store", "ftp://host/x", "--specs", "{specs}"],
     "ftp://host/x", "", None),
    ("worker-store-of-one-process", ["worker", "--store", "memory://", "--specs", "{specs}"],
     "memory://", "", None),
    ("worker-redis-db-out-of-range", ["worker", "--store", f"{_base(REDIS)}/99", "--specs",
     "{specs}"], "/99", "", REDIS),
    ("worker-redis-unknown-query", ["worker", "--store", f"{_base(REDIS)}/0?frobnicate=1",
     "--specs", "{specs}"], "frobnicate", "", REDIS),
    ("worker-unknown-model", ["worker", "--store", "{store}", "--specs", "{specs}", "--model",
     "nope:x"], "nope:x", "", None),
    ("worker-missing-script", ["worker", "--store", "{store}", "--specs", "{specs}", "--model",
     "scripted:/no/such/turns.yaml"], "/no/such/turns.yaml", "", None),
    ("worker-missing-specs", ["worker", "--store", "{store}", "--specs", "/no/such/specs"],
     "/no/such/specs", "", None),
    ("worker-missing-mcp-config", ["worker", "--store", "{store}", "--specs", "{specs}",
     "--mcp-config", "/no/such/.mcp.json"], "/no/such/.mcp.json", "", None),
    ("worker-unknown-option", ["worker", "--store", "{store}", "--specs", "{specs}",
     "--frobnicate"], "--frobnicate", "", None),
    ("worker-bad-metrics-port", ["worker", "--store", "{store}", "--specs", "{specs}",
     "--metrics-port", "99999"], "99999", "", None),
    ("worker-bad-rate-limit", ["worker", "--store", "{store}", "--specs", "{specs}",
     "--rate-limit", "frob"], "frob", "", None),
    # serve
    ("serve-unknown-scheme", ["serve", "--store", "ftp://host/x", "--port", "0"],
     "ftp://host/x", "", None),
    ("serve-redis-db-out-of-range", ["serve", "--store", f"{_base(REDIS)}/99", "--port", "0"],
     "/99", "", REDIS),
    ("serve-bad-port", ["serve", "--store", "{store}", "--port", "99999"], "99999", "", None),
    ("serve-unknown-option", ["serve", "--store", "{store}", "--frobnicate"], "--frobnicate",
     "", None),
    ("serve-a2a-unknown-model", ["serve", "--store", "{store}", "--port", "0", "--a2a",
     "--specs", "{specs}", "--model", "nope:x"], "nope:x", "", None),
    ("serve-a2a-missing-tokens", ["serve", "--store", "{store}", "--port", "0", "--a2a",
     "--specs", "{specs}", "--model", "scripted:{script}", "--a2a-tokens", "/no/such/t.json"],
     "/no/such/t.json", "", None),
    # mcp-serve
    ("mcp-serve-unknown-model", ["mcp-serve", "--store", "{store}", "--specs", "{specs}", "--model",
     "nope:x"],
     "nope:x", "", None),
    ("mcp-serve-missing-specs", ["mcp-serve", "--store", "{store}", "--specs", "/no/such/specs",
     "--model", "scripted:{script}"], "/no/such/specs", "", None),
    ("mcp-serve-missing-script", ["mcp-serve", "--store", "{store}", "--specs", "{specs}",
     "--model", "scripted:/no/such/turns.yaml"], "/no/such/turns.yaml", "", None),
    ("mcp-serve-missing-tokens", ["mcp-serve", "--store", "{store}", "--specs", "{specs}",
     "--model", "scripted:{script}", "--transport", "http", "--tokens", "/no/such/t.json"],
     "/no/such/t.json", "", None),
    ("mcp-serve-bad-port", ["mcp-serve", "--store", "{store}", "--model", "scripted:{script}",
     "--transport", "http", "--port", "x"], "'x'", "", None),
    ("mcp-serve-unknown-option", ["mcp-serve", "--store", "{store}", "--frobnicate"],
     "--frobnicate", "", None),
    # team
    ("team-unknown-scheme", ["team", "list", "--store", "ftp://host/x"], "ftp://host/x", "",
     None),
    ("team-redis-db-out-of-range", ["team", "list", "--store", f"{_base(REDIS)}/99"], "/99", "",
     REDIS),
    ("team-show-unknown-id", ["team", "show", "nope-team", "--store", "{store}"], "nope-team",
     "", None),
    ("team-tasks-unknown-id", ["team", "tasks", "nope-team", "--store", "{store}"], "nope-team",
     "", None),
    ("team-messages-unknown-id", ["team", "messages", "nope-team", "--store", "{store}"],
     "nope-team", "", None),
    ("team-delete-unknown-id", ["team", "delete", "nope-team", "--store", "{store}"],
     "nope-team", "", None),
    ("team-archive-unknown-id", ["team", "archive", "nope-team", "--store", "{store}"],
     "nope-team", "", None),
    ("team-delete-unknown-id-redis", ["team", "delete", "nope-team", "--user", "walker",
     "--store", REDIS], "nope-team", "", REDIS),
    ("team-prune-bad-duration", ["team", "prune", "--older-than", "frob", "--store",
     "{store}"], "frob", "", None),
    ("team-unknown-command", ["team", "frobnicate", "--store", "{store}"], "frobnicate", "",
     None),
    ("team-unknown-option", ["team", "list", "--frobnicate", "--store", "{store}"],
     "--frobnicate", "", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("argv", "names", "hide", "service"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_bad_input_gets_one_clear_line(
    cli: Cli, tmp_path: Path, argv: list[str], names: str, hide: str, service: str | None
) -> None:
    if service is not None and not _reachable(service):
        if os.environ.get("AGENTSCOPE_TEAMS_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{_base(service)} is not reachable")
        pytest.skip(f"{_base(service)} is not reachable")
    files = {
        "script": tmp_path / "turns.yaml",
        "broken": tmp_path / "broken.yaml",
        "mcp": tmp_path / "mcp.json",
        "specs": tmp_path / "specs",
    }
    files["specs"].mkdir()
    files["script"].write_text("lead: [done]\n")
    files["broken"].write_text("lead: [{tool_calls: [{input: {}}]}]\n")
    files["mcp"].write_text('{"mcpServers": {"time": {"command": "true"}}}')
    (tmp_path / "hide").mkdir()
    (tmp_path / "hide" / "sitecustomize.py").write_text(textwrap.dedent(SITECUSTOMIZE))
    values = {k: str(v) for k, v in files.items()} | {"store": f"file://{tmp_path / 'store'}"}
    args = [a.format(**values) for a in argv]
    env = {"PYTHONPATH": str(tmp_path / "hide"), "HIDE_MODULES": hide} if hide else {}
    work = tmp_path / "work"
    work.mkdir()
    done = cli.run(*args, cwd=work, **env)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "Traceback" not in output, output
    assert "unexpected" not in output.lower(), output
    assert names in output, output
    errors = [line for line in output.splitlines() if "error:" in line]
    assert len(errors) <= 1, output
