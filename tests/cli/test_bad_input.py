"""Bad values on the command line, found by trying every command's options the wrong way.

Each case runs the real console script and expects one ``error: ...`` line that names the thing
(the option, the URL, the file) and what to do, and nothing run or written on the way.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .conftest import Cli, one_error_line

REDIS = os.environ.get("AGENTSCOPE_TEAMS_REDIS_URL", "redis://127.0.0.1:6379/0")
REDIS_SERVER = REDIS.rsplit("/", 1)[0]


# -- store URLs ----------------------------------------------------------------------------------


def test_an_empty_store_option_is_refused_not_read_as_the_default(cli: Cli) -> None:
    result = cli.run("sessions", "list", "--store", "")
    assert result.returncode == 2, result.stdout
    assert "--store" in result.stderr and "empty" in result.stderr
    assert not (cli.tmp_path / "home" / ".agentscope_teams").exists()


def test_a_store_url_python_cannot_split_is_named(cli: Cli) -> None:
    result = cli.run("sessions", "list", "--store", "redis://[::1/0")
    assert result.returncode == 1
    line = one_error_line(result)
    assert "redis://[::1/0" in line and "Invalid IPv6 URL" in line, line


@pytest.mark.parametrize("path", ["abc", "1/2", "0x1"])
def test_a_redis_database_that_is_not_a_number_is_refused(cli: Cli, path: str) -> None:
    """redis-py reads ``/abc`` as no database at all, so database 0 would be used silently."""
    url = f"{REDIS_SERVER}/{path}"
    result = cli.run("sessions", "list", "--store", url)
    assert result.returncode == 1, result.stdout
    line = one_error_line(result)
    assert url in line and "database" in line and "0 to 15" in line, line


# -- numbers -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--max-budget-usd", "inf"),
        ("--max-budget-usd", "nan"),
        ("--max-budget-usd", "1e300"),
        ("--max-tokens", "99999999999999999999999999"),
    ],
)
def test_a_budget_out_of_range_is_refused_before_the_model_runs(
    cli: Cli, tmp_path: Path, option: str, value: str
) -> None:
    script = tmp_path / "turns.yaml"
    script.write_text("lead: [never said]\n")
    result = cli("run", "--model", f"scripted:{script}", option, value, "hi")
    assert result.returncode == 1
    line = one_error_line(result)
    assert f"{option} {value}" in line or f"{option} {float(value)}" in line, line
    assert "larger" not in line  # the hint fits the problem
    assert "never said" not in result.stdout


def test_a_prune_age_too_long_is_refused(cli: Cli) -> None:
    result = cli("team", "prune", "--older-than", "99999999999d")
    assert result.returncode == 1
    line = one_error_line(result)
    assert "'99999999999d'" in line and "too long" in line, line


@pytest.mark.parametrize("value", ["inf", "nan", "1e300"])
def test_a_token_lifetime_out_of_range_is_refused(cli: Cli, value: str) -> None:
    result = cli.run("serve", "--create-operator-token", "--token-ttl", value, "--store", REDIS)
    assert result.returncode == 1, result.stdout
    line = one_error_line(result)
    assert "--token-ttl" in line, line
    assert "ast_" not in result.stdout


# -- files ---------------------------------------------------------------------------------------


def _mcp_file(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "mcp.json"
    path.write_bytes(content)
    return path


def test_an_mcp_config_with_a_byte_order_mark_loads(cli: Cli, tmp_path: Path) -> None:
    """Windows editors save JSON with a BOM; spec files with one already load."""
    config = _mcp_file(tmp_path, b'\xef\xbb\xbf{"mcpServers": {}}\r\n')
    script = tmp_path / "turns.yaml"
    script.write_text("lead: [done]\n")
    result = cli("run", "--model", f"scripted:{script}", "--mcp-config", str(config), "hi")
    assert result.returncode == 0, result.stderr
    assert "done" in result.stdout


def test_a_binary_mcp_config_names_the_file(cli: Cli, tmp_path: Path) -> None:
    config = _mcp_file(tmp_path, b'{"mcpServers": {"\xd0\x00\xff": {}}}')
    result = cli("run", "--model", "offline", "--mcp-config", str(config), "hi")
    assert result.returncode == 1
    line = one_error_line(result)
    assert str(config) in line and "UTF-8" in line, line


def test_project_settings_with_a_byte_order_mark_load(cli: Cli, tmp_path: Path) -> None:
    agents = tmp_path / "proj" / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "r.md").write_text("---\nname: r\ndescription: d\n---\nhi\n")
    settings = agents.parent / "settings.json"
    settings.write_bytes(b'\xef\xbb\xbf{"hooks": {}}')
    script = tmp_path / "turns.yaml"
    script.write_text("lead: [done]\nr: [done]\n")
    run = ["run", "--model", f"scripted:{script}", "--specs", str(agents), "--trust-project"]
    result = cli(*run, "hi")
    assert result.returncode == 0, result.stderr

    settings.write_bytes(b'{"hooks": "\xff"}')
    result = cli(*run, "hi")
    assert result.returncode == 1
    line = one_error_line(result)
    assert str(settings) in line and "UTF-8" in line, line


# -- text arguments ------------------------------------------------------------------------------


def test_a_prompt_that_is_not_utf8_is_refused_before_the_model_runs(
    cli: Cli, tmp_path: Path
) -> None:
    script = tmp_path / "turns.yaml"
    script.write_text("lead: [never said]\n")
    prompt = os.fsdecode(b"\xff\xfehi")  # what Python makes of bytes that are not UTF-8
    result = cli("run", "--model", f"scripted:{script}", "--session", "s1", prompt)
    assert result.returncode == 2
    line = result.stderr.splitlines()[-1]
    assert "PROMPT" in line and "UTF-8" in line and "0xff" in line, result.stderr
    assert "never said" not in result.stdout
    listed = cli("sessions", "list", "--json")
    assert "s1" not in listed.stdout


def test_an_empty_session_option_is_refused_not_read_as_a_new_session(
    cli: Cli, tmp_path: Path
) -> None:
    script = tmp_path / "turns.yaml"
    script.write_text("lead: [never said]\n")
    result = cli("run", "--model", f"scripted:{script}", "--session", "", "hi")
    assert result.returncode == 2
    assert "--session" in result.stderr and "empty" in result.stderr, result.stderr
    assert "never said" not in result.stdout


def test_an_empty_to_option_names_the_option_given(cli: Cli) -> None:
    result = cli.run("sessions", "import", "--from", REDIS, "--to", "", "--dry-run")
    assert result.returncode == 2
    assert "--to" in result.stderr.splitlines()[-1] and "empty" in result.stderr, result.stderr


def test_importing_from_a_redis_database_that_is_not_a_number_is_refused(cli: Cli) -> None:
    url = f"{REDIS_SERVER}/abc"
    result = cli("sessions", "import", "--from", url, "--dry-run")
    assert result.returncode == 1, result.stdout
    line = one_error_line(result)
    assert url in line and "database" in line, line


def test_trusting_an_empty_path_does_not_trust_the_current_directory(cli: Cli) -> None:
    work = cli.tmp_path / "work"
    work.mkdir()
    result = cli.run("trust", "add", "", cwd=work)
    assert result.returncode == 2
    line = result.stderr.splitlines()[-1]
    assert "argument PATH" in line and "empty" in line, result.stderr
    assert str(work) not in cli.run("trust", "list").stdout


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--specs", "", "hi"],
        ["run", "--mcp-config", "", "hi"],
        ["review", ""],
        ["specs", "check", ""],
        ["worker", "--workspace", " "],
    ],
    ids=["run-specs", "run-mcp-config", "review-path", "specs-check", "worker-workspace"],
)
def test_an_empty_path_is_a_usage_error_not_the_current_directory(
    cli: Cli, args: list[str]
) -> None:
    result = cli(*args, "--model", "offline") if args[0] == "run" else cli(*args)
    assert result.returncode == 2, result.stdout
    assert "the path is empty" in result.stderr.splitlines()[-1], result.stderr


def test_a_json_model_script_with_a_byte_order_mark_loads_as_yaml_ones_do(
    cli: Cli, tmp_path: Path
) -> None:
    for name, text in (
        ("turns.yaml", b"lead: [from yaml]\n"),
        ("turns.json", b'{"lead": ["from json"]}'),
    ):
        script = tmp_path / name
        script.write_bytes(b"\xef\xbb\xbf" + text)
        result = cli("run", "--model", f"scripted:{script}", "hi")
        assert result.returncode == 0, result.stderr
        assert "from " in result.stdout


SECRET = "sk-very-secret-token-123"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (f"{SECRET}: {{user: a, org: [x\n".encode(), ":2:1: invalid YAML"),
        (f"{SECRET}: {{user: a}}\n".encode() + b"\xd0\xff: {user: b}\n", "not valid UTF-8"),
    ],
    ids=["broken-yaml", "not-utf8"],
)
def test_a_bad_token_file_is_named_without_echoing_its_tokens(
    cli: Cli, tmp_path: Path, content: bytes, says: str
) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_bytes(content)
    args = ["mcp-serve", "--model", "offline", "--transport", "http", "--port", "0"]
    result = cli(*args, "--tokens", str(tokens))
    assert result.returncode == 1
    line = one_error_line(result)
    assert str(tokens) in line and says in line, line
    assert "secret" not in line


def test_a_worker_workspace_that_is_a_file_is_refused_at_start(cli: Cli, tmp_path: Path) -> None:
    afile = tmp_path / "notes.txt"
    afile.write_text("not a folder")
    result = cli("worker", "--model", "offline", "--workspace", str(afile))
    assert result.returncode == 1, result.stderr
    line = result.stderr.splitlines()[-1]
    assert line.startswith("error: ") and str(afile) in line and "directory" in line, line


def test_an_id_that_is_not_utf8_is_called_that(cli: Cli) -> None:
    result = cli("sessions", "list", "--user", os.fsdecode(b"al\xffce"))
    assert result.returncode == 1
    line = one_error_line(result)
    assert "user_id" in line and "not UTF-8" in line and "0xff" in line, line


def test_a_host_that_cannot_be_bound_points_at_host_not_port(cli: Cli) -> None:
    result = cli("serve", "--host", "999.1.1.1", "--port", "0")
    assert result.returncode == 1
    line = one_error_line(result)
    assert "999.1.1.1" in line and "--host" in line and "another --port" not in line, line


@pytest.mark.parametrize(
    "root", ["/dev/null", "/proc/agentscope-teams-store"], ids=["file", "cannot-make"]
)
def test_a_file_store_root_that_cannot_be_a_directory_says_what_to_pass(
    cli: Cli, root: str
) -> None:
    result = cli.run("sessions", "list", "--store", f"file://{root}")
    assert result.returncode == 1
    line = one_error_line(result)
    assert root in line and "file:///" in line, line


@pytest.mark.parametrize(
    "args",
    [
        ["review", "--resume", ""],
        ["review", "--changed-since", "", "examples/sample_project"],
        ["sessions", "show", "s1", "--agent", ""],
        ["sessions", "list", "--agent", " "],
        ["team", "messages", "t1", "--member", ""],
    ],
    ids=["resume", "changed-since", "show-agent", "list-agent", "member"],
)
def test_an_empty_id_option_is_a_usage_error_naming_it(cli: Cli, args: list[str]) -> None:
    result = cli(*args)
    assert result.returncode == 2, result.stdout
    option = next(a for a in args if a.startswith("--"))
    line = result.stderr.splitlines()[-1]
    assert f"argument {option}" in line and "empty" in line, result.stderr
