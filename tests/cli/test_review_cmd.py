"""``agentscope-teams review``: JSON lines, model choice, errors, and the files it ships with."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.cli.review_cmd import DEFAULT_SPECS, LEAD_PROMPT, choose_model
from agentscope_teams.cli.review_run import board_report
from agentscope_teams.context import RuntimeContext
from agentscope_teams.review import RESULT_SCHEMA, ReviewResult, Severity
from agentscope_teams.review.offline_model import OfflineReviewModel
from agentscope_teams.store import BaseStore
from agentscope_teams.teams import LocalTeamClient, Task

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


@pytest.fixture(scope="module")
def json_review(tmp_path_factory: pytest.TempPathFactory) -> tuple[Cli, list[dict[str, Any]]]:
    """One ``review --json`` of the sample project (its command line and events), shared by the
    tests that only read what it printed, wrote and left in its store."""
    cli = Cli(tmp_path_factory.mktemp("json-review"))
    project = cli.tmp_path / "project"
    shutil.copytree(SAMPLE, project)
    result = review(cli, project, "--json")
    assert result.returncode == 0, result.stderr
    return cli, [json.loads(line) for line in result.stdout.splitlines()]


def test_json_prints_one_parseable_event_per_line(
    json_review: tuple[Cli, list[dict[str, Any]]],
) -> None:
    cli, events = json_review
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


RULE = re.compile(r"\(([A-Za-z0-9-]+), confidence (?:high|medium|low)\)")


def bullets(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith("- `")]


def test_the_report_is_rendered_from_the_findings_data_on_the_board(
    json_review: tuple[Cli, list[dict[str, Any]]],
) -> None:
    """review.md lists exactly the findings the members completed their tasks with as data,
    equals the rendering of that data, and follows it when it changes; the text of a result
    plays no part."""
    cli, events = json_review
    end = events[-1]
    report = (cli.tmp_path / "review.md").read_text()

    async def board(store: BaseStore) -> list[Task]:
        client = LocalTeamClient(store, RuntimeContext(session_id=end["session_id"]))
        return list(await client.list_tasks(end["team_id"]))

    tasks = cli.with_store(board)
    assert len(tasks) == 9 and all(t.result_schema == RESULT_SCHEMA for t in tasks)
    data = [ReviewResult.model_validate(t.result_data) for t in tasks]
    in_data = {(f"{f.file}:{f.line}", f.rule) for d in data for f in d.findings}
    in_report = {(b.split("`")[1], m[1]) for b in bullets(report) if (m := RULE.search(b))}
    assert len(in_report) == len(bullets(report))
    assert in_report == in_data and len(in_data) == end["total"] == len(PLANTED)
    assert end["files"] == len({p for d in data for p in d.files}) == 8
    model = "offline-review (deterministic, no LLM)"
    assert report == board_report(tasks, end["target"], model)
    # the lead (offline model) renders the same report from the data its waitForTeam returned
    [lead_end] = [e for e in events if e["type"] == "reply_end" and e["agent"] == "lead"]
    assert lead_end["msg"]["content"][-1]["text"] == report

    # no text: the same report; one finding's data changed: the report changes with it
    textless = [t.model_copy(update={"result": ""}) for t in tasks]
    assert board_report(textless, end["target"], model) == report
    i = next(i for i, d in enumerate(data) if d.findings)
    first = data[i].findings[0]
    moved = first.model_copy(
        update={"line": 999, "severity": Severity.CRITICAL, "message": "moved"}
    )
    changed = data[i].model_copy(update={"findings": [moved, *data[i].findings[1:]]})
    tasks[i] = tasks[i].model_copy(update={"result_data": changed.model_dump(mode="json")})
    after = board_report(tasks, end["target"], model)
    assert f"- `{first.file}:999` — moved ({first.rule}, " in after
    assert not [b for b in bullets(after) if b.startswith(f"- `{first.file}:{first.line}` ")]
    critical = sum(1 for d in data for f in d.findings if f.severity is Severity.CRITICAL)
    assert f"## Critical ({critical + (first.severity is not Severity.CRITICAL)})" in after


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


@pytest.mark.parametrize("where", ["missing/review.md", "."])
def test_an_output_that_cannot_be_written_is_refused_before_the_review(
    cli: Cli, project: Path, where: str
) -> None:
    output = cli.tmp_path / where
    result = cli.run("review", str(project), "--store", cli.url, "--output", str(output))
    assert result.returncode == 1
    assert f"--output {output}" in one_error_line(result)
    assert result.stdout == ""  # refused before the review ran (its findings would be lost)


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


def test_the_review_ends_with_the_tokens_each_agent_used(
    cli: Cli, project: Path, json_review: tuple[Cli, list[dict[str, Any]]]
) -> None:
    result = review(cli, project)
    assert result.returncode == 0, result.stderr
    tail = result.stdout[result.stdout.index("tokens used (as reported by the model):") :]
    rows = {line.split()[0]: line for line in tail.splitlines()[1:]}
    assert set(rows) == {"lead", "reviewer", "security-scanner", "perf-tester", "total"}
    numbers = {name: int(row.split()[1].replace(",", "")) for name, row in rows.items()}
    assert all(n > 0 for n in numbers.values())
    assert numbers["total"] == sum(n for name, n in numbers.items() if name != "total")

    [usage] = [e for e in json_review[1] if e["type"] == "usage"]
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
