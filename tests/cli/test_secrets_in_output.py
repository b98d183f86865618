"""A store password never reaches stdout or stderr of a command: not on a start line, not in an
error about an unreachable or misconfigured store, whatever form the URL gives it in.

Each attack is a real ``agentscope-teams`` process; the control (``test_the_secret_would_show``)
shows the same secret printed when no redaction is applied, so a pass is not for lack of output.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agentscope_teams.store import redact_url

from ..backends import POSTGRES_URL, REDIS_URL
from ..conftest import require_service
from .conftest import CLI, REPO, Cli

SECRET = "Zq9pw-secret"
#: Nothing listens on port 1 of the loopback interface: every connection is refused.
DOWN = "127.0.0.1:1"

#: (what it is, the store URL), every form a driver would read the secret from.
UNREACHABLE = [
    ("redis ?password=", f"redis://{DOWN}/0?password={SECRET}"),
    ("redis raw @ in password", f"redis://:p@{SECRET}@{DOWN}/0"),
    ("redis ?token=", f"redis://{DOWN}/0?token={SECRET}"),
    ("postgres ?password=", f"postgresql://postgres@{DOWN}/x?password={SECRET}"),
    ("postgres raw @ in password", f"postgresql://postgres:p@{SECRET}@{DOWN}/x"),
    ("postgres ?sslpassword=", f"postgresql://postgres@{DOWN}/x?sslpassword={SECRET}"),
    ("mysql raw @ in password", f"mysql://root:p@{SECRET}@{DOWN}/x"),
    ("mysql ?passwd=", f"mysql://root@{DOWN}/x?passwd={SECRET}"),
    ("cluster, several hosts, raw @", f"redis+cluster://u:p@{SECRET}@{DOWN},127.0.0.1:2/"),
    ("unknown scheme", f"ftp://u:{SECRET}@host/x"),
]
COMMANDS = [
    ("sessions", "list"),
    ("team", "list"),
    ("worker", "--specs", "specs"),
    ("serve", "--port", "0"),
]


def _assert_clean(done: subprocess.CompletedProcess[str]) -> None:
    out = done.stdout + done.stderr
    assert SECRET not in out, out
    assert "Traceback" not in out, out


#: Each URL with one command (they cycle), so every command meets several forms of secret.
CASES = [(what, url, COMMANDS[i % len(COMMANDS)]) for i, (what, url) in enumerate(UNREACHABLE)]


@pytest.mark.parametrize(("what", "url", "command"), CASES, ids=[w for w, _, _ in CASES])
def test_store_secret_never_printed_when_store_fails(
    cli: Cli, what: str, url: str, command: tuple[str, ...]
) -> None:
    done = cli.run(*command, "--store", url)
    assert done.returncode != 0, done.stdout
    _assert_clean(done)
    assert done.stderr.startswith("error: "), done.stderr


SOURCES = [(w, u) for w, u in UNREACHABLE if not w.startswith("cluster")]


@pytest.mark.parametrize(("what", "url"), SOURCES, ids=[w for w, _ in SOURCES])
def test_import_source_secret_never_printed(cli: Cli, what: str, url: str) -> None:
    done = cli.run("sessions", "import", "--from", url, "--to", "memory://")
    assert done.returncode != 0, done.stdout
    _assert_clean(done)


def _serve_start_lines(cli: Cli, url: str) -> str:
    """The lines ``serve`` prints until it is ready; the server is then stopped by its PID."""
    proc = subprocess.Popen(
        [str(CLI), "serve", "--port", "0", "--store", url],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=cli.env(),
        cwd=REPO,
    )
    lines = []
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "Ctrl-C" in line or line.startswith("error"):
                break
    finally:
        proc.kill()
        proc.wait(timeout=30)
    return "".join(lines)


def test_serve_start_line_hides_a_query_password(cli: Cli) -> None:
    # PostgreSQL trusts local users here: the password is sent by asyncpg and ignored, so serve
    # starts and prints its start line with the store URL.
    require_service("postgres")
    url = f"{POSTGRES_URL}?password={SECRET}"
    text = _serve_start_lines(cli, url)
    assert "control plane on http://" in text, text
    assert SECRET not in text, text
    assert f"(store {redact_url(url)})" in text


def test_redis_query_password_hidden(cli: Cli) -> None:
    # redis-py sends ?password= as AUTH; a server without a password may refuse or ignore it.
    require_service("redis")
    url = f"{REDIS_URL}?password={SECRET}"
    _assert_clean(cli.run("sessions", "list", "--store", url))
    assert SECRET not in _serve_start_lines(cli, url)


def test_the_secret_would_show(tmp_path: Path) -> None:
    """Control: the URL as given holds the secret, and the CLI prints the URL it was given."""
    url = f"redis://{DOWN}/0?password={SECRET}"
    assert SECRET in url and SECRET not in redact_url(url)
    done = Cli(tmp_path).run("sessions", "list", "--store", url)
    assert "redis://127.0.0.1:1/0?password=***" in done.stderr, done.stderr
