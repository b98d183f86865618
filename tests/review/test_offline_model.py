"""OfflineReviewModel on its own: decisions from the conversation, reading tool output back.

The model plays the lead and the members of a small stub team (``team_stub``) with the team tools'
names and arguments; the real runtime is covered end to end in ``test_offline_review.py``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams.message import Msg, ToolResultBlock, ToolUseBlock, UserMsg
from agentscope_teams.model import (
    ModelRequest,
    ModelResponse,
    TextDelta,
    ToolCallDelta,
    ToolSchema,
)
from agentscope_teams.review import ReviewResult
from agentscope_teams.review.offline_files import discover
from agentscope_teams.review.offline_model import OfflineReviewModel
from agentscope_teams.review.transcript import Call, files_in_text, rebuild_source, split_files
from agentscope_teams.teams.member.work import Work
from agentscope_teams.teams.results import (
    BoardListing,
    TaskAssigned,
    TaskBrief,
    TaskClaimed,
    TeamWaited,
)
from agentscope_teams.teams.rules.models import TaskStatus
from agentscope_teams.tools import ToolOutput

from .team_stub import SPECS, StubTeam

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "examples" / "sample_project"
LEAD_PROMPT = (REPO / "agentscope_teams" / "review" / "lead_prompt.md").read_text()
PLANTED = [p for p in json.loads((SAMPLE / "PLANTED.json").read_text()) if p.get("found", True)]
OWNER = {"security": "security-scanner", "performance": "perf-tester", "quality": "reviewer"}
MEMBER_TOOLS = [ToolSchema(name=n) for n in ("claimTask", "completeTask", "read_file")]


def spec_prompt(name: str) -> str:
    return (SPECS / f"{name}.md").read_text().split("---", 2)[2]


def request(system: str, messages: list[Msg], tools: list[ToolSchema]) -> ModelRequest:
    return ModelRequest(system_prompt=system, messages=messages, tools=tools)


IN_PROGRESS = TaskStatus.IN_PROGRESS


def _text_and_data(output: str | ToolOutput) -> tuple[str, dict[str, Any] | None]:
    """A tool's result as the toolkit records it: text, and the data of a structured result."""
    if isinstance(output, ToolOutput):
        return output.render(), output.data()
    return output, None


def claimed(task_id: str, title: str, description: str) -> TaskClaimed:
    task = TaskBrief(id=task_id, title=title, status=IN_PROGRESS, owner="reviewer")
    return TaskClaimed(member="reviewer", task=task, description=description)


def answered(
    name: str, args: dict[str, object], output: str | ToolOutput, error: bool = False
) -> list[Msg]:
    """An assistant tool call and its result (a structured one as the toolkit records it)."""
    text, data = _text_and_data(output)
    call = ToolUseBlock(id=f"c-{name}-{len(text)}", name=name, input=args)
    result = ToolResultBlock(tool_use_id=call.id, name=name, output=text, is_error=error, data=data)
    return [
        Msg(role="assistant", name="m", content=[call]),
        Msg(role="user", name="tool", content=[result]),
    ]


def replies(response: ModelResponse, outputs: dict[str, str | ToolOutput]) -> list[Msg]:
    """The assistant message of ``response`` and a result for each of its calls."""
    results = [
        ToolResultBlock(tool_use_id=c.id, name=c.name, output=text, data=data)
        for c in response.tool_calls
        for text, data in [_text_and_data(outputs[c.name])]
    ]
    return [
        Msg(role="assistant", name="m", content=list(response.content)),
        Msg(role="user", name="tool", content=list(results)),
    ]


async def test_the_whole_team_reports_every_planted_finding_with_its_finder(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    shutil.copytree(SAMPLE, project)
    team = StubTeam(OfflineReviewModel(), project)

    final = await team.run_lead(LEAD_PROMPT, "Review this.\nTarget: project")

    report = final.get_text_content()
    assert report.startswith("# Code review: project")
    for p in PLANTED:
        line = next(
            x
            for x in report.splitlines()
            if f"`{p['file']}:{p['line']}`" in x and f"({p['rule']}, confidence" in x
        )
        assert line.endswith(f"found by {OWNER[p['category']]}"), line
    bullets = [x for x in report.splitlines() if x.startswith("- `")]
    assert len(bullets) == len(PLANTED)
    assert "No findings in `app/__init__.py`, `app/models.py`, `app/pagination.py`." in report
    assert len(team.tasks) == 9 and {t.status for t in team.tasks.values()} == {"completed"}
    assert {t.owner for t in team.tasks.values()} == set(OWNER.values())
    # the reviewer told the security scanner what it noticed in its area
    assert any(s == "reviewer" and to == "security-scanner" for s, to, _ in team.messages)


async def test_a_member_claims_reads_then_completes_with_its_own_area_only() -> None:
    model = OfflineReviewModel()
    system = spec_prompt("perf-tester")
    history: list[Msg] = [UserMsg("Work on your tasks.")]

    step = await model.generate(request(system, history, MEMBER_TOOLS))
    assert [c.name for c in step.tool_calls] == ["claimTask"]

    history += answered("claimTask", {}, claimed("t-4", "Perf", "Review these:\napp/loop.py\n"))
    step = await model.generate(request(system, history, MEMBER_TOOLS))
    assert [(c.name, c.input) for c in step.tool_calls] == [("read_file", {"path": "app/loop.py"})]

    source = "def f(xs, ys):\n    s = ''\n    for x in xs:\n        if x in ys:\n            s += x\n    eval(s)\n"
    numbered = "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(source.splitlines(), 1))
    history += answered("read_file", {"path": "app/loop.py"}, numbered)
    step = await model.generate(request(system, history, MEMBER_TOOLS))
    names = [c.name for c in step.tool_calls]
    assert names == ["sendMessage", "completeTask", "claimTask"]
    message, complete = step.tool_calls[0].input, step.tool_calls[1].input
    assert message["to"] == "security-scanner" and "app/loop.py:6" in str(message["content"])
    assert complete["task_id"] == "t-4"
    assert "app/loop.py:5" in str(complete["result"]) and "eval" not in str(complete["result"])
    data = ReviewResult.model_validate(complete["data"])  # what the board checks and the lead reads
    assert data.files == ["app/loop.py"]
    assert [(f.line, f.category) for f in data.findings] == [(5, "performance")]

    outputs: dict[str, str | ToolOutput] = {
        "sendMessage": "sent",
        "completeTask": "completed t-4",
        "claimTask": TaskClaimed(member="reviewer"),
    }
    history += replies(step, outputs)
    step = await model.generate(request(system, history, MEMBER_TOOLS))
    assert [(c.name, c.input) for c in step.tool_calls] == [
        ("listTasks", {"status": "in_progress"})
    ]
    mine = TaskBrief(id="t-9", title="x", status=IN_PROGRESS, owner="reviewer")
    history += replies(step, {"listTasks": BoardListing(tasks=[mine])})
    step = await model.generate(request(system, history, MEMBER_TOOLS))
    assert step.tool_calls == [] and step.stop_reason == "end_turn"
    assert "completed t-4" in step.text


async def test_a_file_cut_short_is_read_on_from_the_offset() -> None:
    model = OfflineReviewModel()
    system = spec_prompt("reviewer")
    history = [UserMsg("go"), *answered("claimTask", {}, claimed("t-1", "t-1", "big.py"))]
    first = "     1\tx = 1\n... more lines follow; call read_file with offset=1 to continue"
    history += answered("read_file", {"path": "big.py"}, first)

    step = await model.generate(request(system, history, MEMBER_TOOLS))

    assert [(c.name, c.input) for c in step.tool_calls] == [
        ("read_file", {"path": "big.py", "offset": 1})
    ]


async def test_the_lead_starts_by_listing_python_files_and_answers_text_without_tools() -> None:
    model = OfflineReviewModel()
    tools = [ToolSchema(name=n) for n in ("createTeam", "glob_files")]
    step = await model.generate(request(LEAD_PROMPT, [UserMsg("Target: x")], tools))
    assert [(c.name, c.input) for c in step.tool_calls] == [("glob_files", {"pattern": "**/*.py"})]

    history = [UserMsg("Target: x"), *answered("glob_files", {"pattern": "**/*.py"}, "a.py")]
    final = await model.generate(request(LEAD_PROMPT, history, []))
    assert final.tool_calls == [] and "nothing was reviewed" not in final.text


async def test_stream_yields_text_then_calls_then_the_same_response() -> None:
    model = OfflineReviewModel()
    items = [
        i
        async for i in model.stream(
            request(LEAD_PROMPT, [UserMsg("hi")], [ToolSchema(name="createTeam")])
        )
    ]
    response = items[-1]
    assert isinstance(response, ModelResponse) and response.model == model.model_name
    text = "".join(i.text for i in items if isinstance(i, TextDelta))
    assert text == response.text and text
    deltas = [i for i in items if isinstance(i, ToolCallDelta)]
    assert [d.name for d in deltas] == [c.name for c in response.tool_calls]


async def test_unknown_roles_get_a_plain_explanation() -> None:
    response = await OfflineReviewModel().generate(request("You are a poet.", [UserMsg("hi")], []))
    assert "not an LLM" in response.text and not response.tool_calls


def test_concurrent_requests_do_not_share_state() -> None:
    model = OfflineReviewModel()
    lead = request(LEAD_PROMPT, [UserMsg("Target: x")], [ToolSchema(name="createTeam")])
    member = request(spec_prompt("reviewer"), [UserMsg("go")], MEMBER_TOOLS)

    async def both() -> list[str]:
        out: list[str] = []

        async def one(r: ModelRequest) -> None:
            out.append((await model.generate(r)).tool_calls[0].name)

        async with anyio.create_task_group() as tg:
            for r in (lead, member, lead, member):
                tg.start_soon(one, r)
        return sorted(out)

    assert anyio.run(both) == ["claimTask", "claimTask", "glob_files", "glob_files"]


@pytest.mark.parametrize(
    ("chunks", "source", "offset"),
    [
        (["     1\ta\n     2\t\tb"], "a\n\tb\n", None),
        (["     2\tb", "     1\ta"], "a\nb\n", None),
        (["     1\ta\n... more lines follow; call read_file with offset=1 to continue"], "a\n", 1),
        (["     1\ta\n     2\tbb\n\n[output truncated: 1 of 9 characters omitted; ask]"], "a\n", 1),
        (["x.py is empty"], "", None),
    ],
)
def test_rebuild_source(chunks: list[str], source: str, offset: int | None) -> None:
    rebuilt = rebuild_source(chunks)
    assert (rebuilt.source, rebuilt.next_offset) == (source, offset)


def test_files_in_text_and_split_files() -> None:
    text = "Security review of these files, one per line:\napp/a.py\n- `app/b.py`\nnot a file.\n"
    assert files_in_text(text) == ["app/a.py", "app/b.py"]
    assert split_files([f"{i}.py" for i in range(8)]) == [
        ["0.py", "1.py", "2.py"],
        ["3.py", "4.py", "5.py"],
        ["6.py", "7.py"],
    ]
    assert len(split_files([f"{i}.py" for i in range(100)])) == 4


async def test_calls_cut_off_by_a_crash_are_made_again() -> None:
    model = OfflineReviewModel()
    system = spec_prompt("security-scanner")
    recovered = "the tool call did not complete: the process stopped before its result was saved"
    history = [UserMsg("go"), *answered("claimTask", {}, claimed("t-2", "x", "a.py"))]
    history += answered("read_file", {"path": "a.py"}, recovered, error=True)

    step = await model.generate(request(system, history, MEMBER_TOOLS))

    assert [(c.name, c.input) for c in step.tool_calls] == [("read_file", {"path": "a.py"})]


async def test_a_member_takes_up_the_task_it_already_owns() -> None:
    work = Work("You have new work: ...", offers=set(), own=["t-7"])
    step = await OfflineReviewModel().generate(
        request(spec_prompt("security-scanner"), [work.message()], MEMBER_TOOLS)
    )
    assert [(c.name, c.input) for c in step.tool_calls] == [("claimTask", {"task_id": "t-7"})]


async def test_the_lead_spawns_only_the_reviewer_specs_it_is_offered() -> None:
    system = LEAD_PROMPT + "\n\nSpecs you can spawn members from:\n- reviewer: General review."
    history = [UserMsg("Target: x"), *answered("glob_files", {"pattern": "**/*.py"}, "a.py")]
    history += answered("createTeam", {"name": "code-review"}, "Created team team-1.")
    step = await OfflineReviewModel().generate(
        request(system, history, [ToolSchema(name="createTeam")])
    )
    assert [(c.name, c.input) for c in step.tool_calls] == [
        ("spawnMember", {"name": "reviewer", "spec": "reviewer"})
    ]


async def test_a_member_that_lost_its_claim_finds_it_on_the_board() -> None:
    model = OfflineReviewModel()
    system = spec_prompt("reviewer") + '\nYou are member "reviewer" of team "code-review".'
    history = [UserMsg("go"), *answered("claimTask", {}, TaskClaimed(member="reviewer"))]

    step = await model.generate(request(system, history, MEMBER_TOOLS))
    assert [(c.name, c.input) for c in step.tool_calls] == [
        ("listTasks", {"status": "in_progress"})
    ]

    board = BoardListing(
        tasks=[
            TaskBrief(id="t-4", title="Code review: a.py", status=IN_PROGRESS, owner="reviewer"),
            TaskBrief(id="t-5", title="x", status=IN_PROGRESS, owner="perf-tester"),
        ]
    )
    history += answered("listTasks", {"status": "in_progress"}, board)
    step = await model.generate(request(system, history, MEMBER_TOOLS))
    assert [(c.name, c.input) for c in step.tool_calls] == [("claimTask", {"task_id": "t-4"})]


async def test_the_lead_nudges_members_whose_tasks_wait_and_waits_again() -> None:
    history = [UserMsg("Target: x"), *answered("glob_files", {"pattern": "**/*.py"}, "a.py")]
    history += answered("createTeam", {"name": "code-review"}, "Created team team-1.")
    for name in ("reviewer", "security-scanner", "perf-tester"):
        history += answered("spawnMember", {"name": name, "spec": name}, f"Spawned {name}.")
    assigned = TaskBrief(id="t-1", title="t", status=TaskStatus.PENDING, assignee="reviewer")
    history += answered(
        "assignTask", {"title": "t", "assignee": "reviewer"}, TaskAssigned(task=assigned)
    )
    timed_out = TeamWaited(
        done=False,
        seconds=30,
        tasks=[
            TaskBrief(
                id="t-1",
                title="a",
                status=TaskStatus.COMPLETED,
                owner="reviewer",
                result="no findings",
            ),
            TaskBrief(id="t-2", title="b", status=TaskStatus.PENDING, assignee="security-scanner"),
            TaskBrief(id="t-3", title="c", status=IN_PROGRESS, owner="perf-tester"),
        ],
    )
    history += answered("waitForTeam", {"timeout_seconds": 30}, timed_out)

    step = await OfflineReviewModel().generate(
        request(LEAD_PROMPT, history, [ToolSchema(name="createTeam")])
    )

    calls = [(c.name, c.input.get("to")) for c in step.tool_calls]
    assert calls == [("sendMessage", "security-scanner"), ("waitForTeam", None)]
    assert "t-2" in str(step.tool_calls[0].input["content"])


def test_a_cut_file_listing_is_split_by_directory() -> None:
    cut = "a.py\n.venv/x.py\n... 5000 more files"
    first = [Call("glob_files", {"pattern": "**/*.py"}, cut)]
    assert discover(first) == ([], [("list_files", {"path": "."})], None)

    listed = "src/\n.venv/\nsite-packages/\nsetup.py\nREADME.md"
    second = [*first, Call("list_files", {"path": "."}, listed)]
    assert discover(second) == (
        ["setup.py"],
        [("glob_files", {"pattern": "**/*.py", "path": "src"})],
        None,
    )

    third = [*second, Call("glob_files", {"pattern": "**/*.py", "path": "src"}, "src/m.py")]
    assert discover(third) == (["setup.py", "src/m.py"], [], None)


async def test_after_a_stop_the_lead_assigns_only_what_did_not_reach_the_board() -> None:
    history = [UserMsg("Target: x"), *answered("glob_files", {"pattern": "**/*.py"}, "a.py")]
    history += answered("createTeam", {"name": "code-review"}, "Created team team-1.")
    for name in ("reviewer", "security-scanner", "perf-tester"):
        history += answered("spawnMember", {"name": name, "spec": name}, f"Spawned {name}.")
    cut = "the tool call did not complete: the process running it stopped"
    for title, member in (("Code review: a.py", "reviewer"), ("Security review: a.py", "x")):
        history += answered("assignTask", {"title": title, "assignee": member}, cut, error=True)
    lead_tools = [ToolSchema(name="createTeam")]

    step = await OfflineReviewModel().generate(request(LEAD_PROMPT, history, lead_tools))
    assert [c.name for c in step.tool_calls] == ["listTasks"]

    landed = TaskBrief(
        id="t-1", title="Code review: a.py", status=TaskStatus.PENDING, assignee="reviewer"
    )
    history += answered("listTasks", {}, BoardListing(tasks=[landed]))
    step = await OfflineReviewModel().generate(request(LEAD_PROMPT, history, lead_tools))
    assigned = [(c.name, c.input["assignee"]) for c in step.tool_calls]
    assert assigned == [("assignTask", "security-scanner"), ("assignTask", "perf-tester")]
