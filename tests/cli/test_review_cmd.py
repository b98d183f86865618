"""``agentscope-teams review``: JSON lines, model choice, errors, and the files it ships with."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.cli.review_cmd import DEFAULT_SPECS, LEAD_PROMPT, choose_model
from agentscope_teams.review.offline_model import OfflineReviewModel

from .conftest import REPO, Cli, one_error_line

SAMPLE = REPO / "examples" / "sample_project"
PLANTED = [p for p in json.loads((SAMPLE / "PLANTED.json").read_text()) if p.get("found", True)]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(SAMPLE, target)
    return target


def review(cli: Cli, project: Path, *args: str, **env: str) -> Any:
    out = cli.tmp_path / "review.md"
    return cli.run("review", str(project), "--store", cli.url, "--output", str(out), *args, **env)


def test_json_prints_one_parseable_event_per_line(cli: Cli, project: Path) -> None:
    result = review(cli, project, "--json")

    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    start, end = events[0], events[-1]
    assert start["type"] == "review_start" and start["offline"] is True
    assert start["note"] == "offline model: deterministic static analysis, not an LLM"
    assert end["type"] == "review_end" and end["total"] == len(PLANTED)
    assert end["output"] == str(cli.tmp_path / "review.md") and end["files"] == 8
    types = {e["type"] for e in events}
    assert {
        "reply_start",
        "tool_call",
        "tool_result",
        "reply_end",
        "board",
        "team_message",
    } <= types
    calls = [e["tool_call"]["name"] for e in events if e["type"] == "tool_call"]
    assert calls[:5] == ["glob_files", "createTeam", "spawnMember", "spawnMember", "spawnMember"]
    final_board = [e for e in events if e["type"] == "board"][-1]["tasks"]
    assert {t["status"] for t in final_board} == {"completed"} and len(final_board) == 9
    assert (cli.tmp_path / "review.md").read_text().startswith("# Code review: ")


def test_model_offline_wins_over_an_api_key(cli: Cli, project: Path) -> None:
    result = review(cli, project, "--model", "offline", DASHSCOPE_API_KEY="sk-not-used")
    assert result.returncode == 0, result.stderr
    assert "offline model: deterministic static analysis, not an LLM" in result.stdout


def test_the_model_follows_the_flag_then_the_api_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    name, model = choose_model(None)
    assert name == "offline" and isinstance(model, OfflineReviewModel)

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert choose_model(None)[0] == "openai:gpt-4o-mini"
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-test")
    name, model = choose_model(None)
    assert name == "dashscope:qwen-plus" and model.model_name == "qwen-plus"
    assert choose_model("openai:gpt-4o")[1].model_name == "gpt-4o"
    assert isinstance(choose_model("offline")[1], OfflineReviewModel)


def test_a_path_that_is_not_a_directory_is_an_error(cli: Cli, tmp_path: Path) -> None:
    result = review(cli, tmp_path / "missing")
    assert result.returncode == 1
    assert "missing is not a directory" in one_error_line(result)


def test_workers_need_a_store_shared_across_processes(cli: Cli, project: Path) -> None:
    result = cli.run("review", str(project), "--workers", "2", "--store", "memory://")
    assert result.returncode == 1
    assert "not shared across processes" in one_error_line(result)
    assert result.stdout == ""  # refused before anything started


def test_a_spec_directory_without_the_reviewers_is_an_error(cli: Cli, project: Path) -> None:
    result = review(cli, project, "--specs", str(project))
    assert result.returncode == 1
    assert "has no reviewer.md" in one_error_line(result)


def test_a_review_that_runs_out_of_time_says_so(cli: Cli, project: Path) -> None:
    result = review(cli, project, "--timeout", "0.05")
    assert result.returncode == 1
    assert "did not finish within 0.05 seconds" in one_error_line(result)
    assert not (cli.tmp_path / "review.md").exists()


def test_the_package_ships_the_lead_prompt_and_the_specs() -> None:
    assert LEAD_PROMPT.read_text() == (REPO / "examples" / "code_review" / "lead.md").read_text()
    shipped = {p.name: p.read_text() for p in DEFAULT_SPECS.glob("*.md")}
    assert shipped == {p.name: p.read_text() for p in (REPO / "specs").glob("*.md")}
    assert set(shipped) == {"reviewer.md", "security-scanner.md", "perf-tester.md"}


def test_the_review_ends_with_the_tokens_each_agent_used(cli: Cli, project: Path) -> None:
    result = review(cli, project)
    assert result.returncode == 0, result.stderr
    tail = result.stdout[result.stdout.index("tokens used (as reported by the model):") :]
    rows = {line.split()[0]: line for line in tail.splitlines()[1:]}
    assert set(rows) == {"lead", "reviewer", "security-scanner", "perf-tester", "total"}
    numbers = {name: int(row.split()[1].replace(",", "")) for name, row in rows.items()}
    assert all(n > 0 for n in numbers.values())
    assert numbers["total"] == sum(n for name, n in numbers.items() if name != "total")

    events = [json.loads(line) for line in review(cli, project, "--json").stdout.splitlines()]
    [usage] = [e for e in events if e["type"] == "usage"]
    assert set(usage["agents"]) == {"lead", "reviewer", "security-scanner", "perf-tester"}
    assert all(a["input_tokens"] > 0 and a["requests"] > 0 for a in usage["agents"].values())


def test_otel_variables_trace_the_review_to_the_console(cli: Cli, project: Path) -> None:
    result = review(cli, project, "--json", OTEL_TRACES_EXPORTER="console")
    assert result.returncode == 0, result.stderr
    spans, depth, buf = [], 0, ""
    for line in result.stdout.splitlines():  # the console exporter prints indented JSON spans
        if not buf and not line.startswith("{"):
            continue
        if not buf and line.startswith('{"'):  # one of the command's JSON lines
            continue
        buf += line + "\n"
        depth += line.count("{") - line.count("}")
        if depth == 0:
            spans.append(json.loads(buf))
            buf = ""
    names = {s["name"] for s in spans}
    assert {"invoke_agent lead", "invoke_agent reviewer", "execute_tool createTeam"} <= names
    assert any(n.startswith("chat offline-review") for n in names)
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    assert {s["resource"]["attributes"]["service.name"] for s in spans} == {"agentscope-teams"}
