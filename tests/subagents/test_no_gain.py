"""A subagent never gets more than the agent that spawns it: a grandchild whose parent has no
MCP tool (its ``tools:`` names none, or its ``disallowedTools`` removes them) gets none either."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel

from agentscope_teams import (
    Budget,
    BudgetExceededError,
    HarnessAgent,
    RuntimeContext,
    ScriptedModel,
    SubagentSpec,
)
from agentscope_teams.message import TextBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.store import InMemoryStore

pytestmark = pytest.mark.anyio

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
RUN = re.compile(r"\br-[0-9a-f]{10}\b")
ECHO_SERVER = Path(__file__).resolve().parent.parent / "mcp" / "echo_server.py"
ECHO = {"command": sys.executable, "args": [str(ECHO_SERVER)], "trustAnnotations": True}


def _spec(tmp_path: Path, name: str, front: str, prompt: str) -> SubagentSpec:
    path = tmp_path / f"{name}.md"
    path.write_text(f"---\nname: {name}\ndescription: The {name}.\n{front}---\n{prompt}\n")
    return SubagentSpec.from_file(path)


def _offered(model: ScriptedModel, prompt: str) -> list[set[str]]:
    return [{t.name for t in r.tools} for r in model.requests if r.system_prompt.startswith(prompt)]


@pytest.mark.parametrize(
    ("mid_front", "leaf_front", "expected"),
    [
        # the leaf inherits: it may not inherit more than mid has
        ("tools: Read, Agent\n", "", set()),
        ("tools: Read, Agent\n", "tools: Read, mcp__echo__echo\n", set()),  # nor name it
        ("disallowedTools: mcp__echo\n", "", set()),  # mid's deny list holds for its children
        # of what mid has, the leaf gets what it asks for
        ("tools: Read, Agent, mcp__echo__echo\n", "", {"mcp__echo__echo"}),
        ("disallowedTools: mcp__echo__delete_everything\n", "tools: mcp__echo\n", None),
    ],
)
async def test_a_grandchild_gets_no_mcp_tool_its_parent_lacks(
    tmp_path: Path, mid_front: str, leaf_front: str, expected: set[str] | None
) -> None:
    mid = _spec(tmp_path, "mid", mid_front, "You are mid.")
    leaf = _spec(tmp_path, "leaf", leaf_front, "You are leaf.")

    def script(request: ModelRequest) -> object:
        seen = " ".join(str(m.content) for m in request.messages)
        if request.system_prompt.startswith("You are leaf."):
            return "leaf done"
        if request.system_prompt.startswith("You are mid."):
            if "leaf done" in seen:
                return "mid done"
            return ScriptedModel.tool_call("agent_spawn", {"agent": "leaf", "task": "x"})
        if "mid done" in seen:
            return "lead done"
        return ScriptedModel.tool_call("agent_spawn", {"agent": "mid", "task": "y"})

    model = ScriptedModel(script)
    lead = HarnessAgent(
        "lead",
        model,
        "Lead.",
        specs=[mid, leaf],
        mcp_servers={"echo": ECHO},
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
    )
    try:
        reply = await lead.call("go", CTX)
    finally:
        await lead.aclose()
    assert reply.get_text_content() == "lead done"
    assert "mcp__echo__echo" in {t.name for t in model.requests[0].tools}  # the lead has it
    mid_mcp = {n for n in _offered(model, "You are mid.")[0] if n.startswith("mcp__")}
    [leaf_tools] = _offered(model, "You are leaf.")
    leaf_mcp = {n for n in leaf_tools if n.startswith("mcp__")}
    if expected is None:  # everything mid has
        expected = mid_mcp
        assert "mcp__echo__echo" in mid_mcp and "mcp__echo__delete_everything" not in mid_mcp
    assert leaf_mcp == expected


def _costly(text: str, tokens: int) -> ScriptedModel:
    def reply(request: ModelRequest) -> ModelResponse:
        return ModelResponse(
            content=[TextBlock(text=text)], usage=Usage(input_tokens=tokens, output_tokens=0)
        )

    return ScriptedModel(reply, name=text)


async def test_a_childs_spend_counts_against_the_leads_budget(tmp_path: Path) -> None:
    """The lead's session budget (1000 tokens) covers its children: after two children spent
    600 tokens each, the lead's next model call is refused, naming the lead's budget."""
    steps = [
        ScriptedModel.tool_call("agent_spawn", {"agent": "child", "task": "a"}),
        ScriptedModel.tool_call("agent_spawn", {"agent": "child", "task": "b"}),
        ScriptedModel.tool_call("agent_list", {}),
        ScriptedModel.tool_call("agent_list", {}),
        ModelResponse(content=[TextBlock(text="lead done")]),
    ]
    one = Usage(input_tokens=1, output_tokens=0)  # the lead itself spends next to nothing
    lead_model = ScriptedModel([s.model_copy(update={"usage": one}) for s in steps])
    child = SubagentSpec(name="child", description="c", model="child")
    lead = HarnessAgent(
        "lead",
        lead_model,
        "Lead.",
        specs=[child],
        models={"child": _costly("child", 600)},
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        budget=Budget(max_tokens=1000),
    )
    try:
        with pytest.raises(BudgetExceededError) as caught:
            await lead.call("go", CTX)
    finally:
        await lead.aclose()
    assert caught.value.budget == "session:acme/alice/s1"
    assert caught.value.used >= 1200


async def test_max_turns_holds_for_the_whole_run_when_a_subagent_stop_hook_blocks(
    tmp_path: Path,
) -> None:
    """``maxTurns: 2`` caps the run: a SubagentStop hook that blocks (asking for more work) does
    not give the child two more turns; the parent reads that the limit was hit."""
    spec = _spec(tmp_path, "looper", "maxTurns: 2\n", "You loop.")
    blocked: list[bool] = []

    def keep_going(payload: dict[str, object]) -> dict[str, str]:
        blocked.append(bool(payload.get("stop_hook_active")))
        return {"decision": "block", "reason": "keep going"}

    def script(request: ModelRequest) -> object:
        if request.system_prompt.startswith("You loop."):
            return ScriptedModel.tool_call("list_files", {}) if request.tools else "partial"
        seen = " ".join(str(m.content) for m in request.messages)
        return "lead done" if "looper" in seen else _spawn_looper()

    model = ScriptedModel(script)
    lead = HarnessAgent(
        "lead",
        model,
        "Lead.",
        specs=[spec],
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        hooks={"SubagentStop": [keep_going]},
    )
    try:
        await lead.call("go", CTX)
    finally:
        await lead.aclose()
    child_calls = [r for r in model.requests if r.system_prompt.startswith("You loop.")]
    assert len([r for r in child_calls if r.tools]) == 2  # two turns with tools, in all
    result = str(model.requests[-1].messages[-1].content)
    assert "stopped at its turn limit (2 turns" in result, result


def _spawn_looper() -> object:
    return ScriptedModel.tool_call("agent_spawn", {"agent": "looper", "task": "loop"})


async def test_max_turns_left_after_a_blocked_stop_are_what_the_run_has_left(
    tmp_path: Path,
) -> None:
    """``maxTurns: 3``: the child answers after two turns, a SubagentStop hook blocks once, and
    the child has one turn left (then one last answer without tools), not three more."""
    spec = _spec(tmp_path, "looper", "maxTurns: 3\n", "You loop.")

    def once(payload: dict[str, object]) -> dict[str, str]:
        if payload.get("stop_hook_active"):
            return {}
        return {"decision": "block", "reason": "keep going"}

    def script(request: ModelRequest) -> object:
        if request.system_prompt.startswith("You loop."):
            if len(request.messages) == 2:  # the tool result of its first turn
                return "first answer"
            return ScriptedModel.tool_call("list_files", {}) if request.tools else "partial"
        seen = " ".join(str(m.content) for m in request.messages)
        return "lead done" if "looper" in seen else _spawn_looper()

    model = ScriptedModel(script)
    lead = HarnessAgent(
        "lead",
        model,
        "Lead.",
        specs=[spec],
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
        hooks={"SubagentStop": [once]},
    )
    try:
        await lead.call("go", CTX)
    finally:
        await lead.aclose()
    child_calls = [r for r in model.requests if r.system_prompt.startswith("You loop.")]
    assert len([r for r in child_calls if r.tools]) == 3
    result = str(model.requests[-1].messages[-1].content)
    assert "stopped at its turn limit (3 turns" in result and "partial" in result, result


class _Verdict(BaseModel):
    verdict: str


async def test_a_structured_answer_at_the_turn_limit_says_the_limit_was_hit(
    tmp_path: Path,
) -> None:
    """A spec with ``output`` and ``maxTurns: 2`` that loops: its last (forced) answer is valid
    output, and the parent still reads that the run stopped at its turn limit."""

    def child(request: ModelRequest) -> object:
        if any(t.name == "list_files" for t in request.tools):
            return ScriptedModel.tool_call("list_files", {})
        return ScriptedModel.final_result({"verdict": "partial"})

    spec = SubagentSpec(
        name="rate", description="Rates.", model="rate", output_type=_Verdict, max_turns=2
    )
    lead_model = ScriptedModel([_spawn("rate"), "noted"])
    lead = HarnessAgent(
        "lead",
        lead_model,
        "Lead.",
        specs=[spec],
        models={"rate": ScriptedModel(child)},
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
    )
    try:
        await lead.call("go", CTX)
    finally:
        await lead.aclose()
    result = str(lead_model.requests[1].messages[-1].content)
    assert "stopped at its turn limit (2 turns" in result and '"partial"' in result, result


def _spawn(name: str) -> object:
    return ScriptedModel.tool_call("agent_spawn", {"agent": name, "task": "go"})


@pytest.mark.parametrize(
    ("mid_front", "leaf_gets_it"), [("tools: Read, Agent\n", False), ("", True)]
)
async def test_a_grandchild_gets_the_skill_tool_only_if_its_parent_has_it(
    tmp_path: Path, mid_front: str, leaf_gets_it: bool
) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    skill = tmp_path / ".claude" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\ndescription: Deploys.\n---\nRun the deploy.\n")
    for name, front in (("mid", mid_front), ("leaf", "")):
        text = f"---\nname: {name}\ndescription: The {name}.\n{front}---\nYou are {name}.\n"
        (agents / f"{name}.md").write_text(text)

    def script(request: ModelRequest) -> object:
        seen = " ".join(str(m.content) for m in request.messages)
        if request.system_prompt.startswith("You are leaf."):
            return "leaf done"
        if request.system_prompt.startswith("You are mid."):
            return "mid done" if "leaf done" in seen else _spawn("leaf")
        return "lead done" if "mid done" in seen else _spawn("mid")

    model = ScriptedModel(script)
    lead = HarnessAgent("lead", model, "Lead.", specs=agents, store=InMemoryStore())
    try:
        await lead.call("go", CTX)
    finally:
        await lead.aclose()
    [mid_tools] = _offered(model, "You are mid.")[:1]
    [leaf_tools] = _offered(model, "You are leaf.")
    assert ("skill" in mid_tools) is leaf_gets_it
    assert ("skill" in leaf_tools) is leaf_gets_it, sorted(leaf_tools)


async def test_a_message_a_run_at_its_turn_limit_cannot_read_is_named_in_its_result(
    tmp_path: Path,
) -> None:
    """``maxTurns: 1``: a message sent while the child gives its last answer starts no further
    turn, and the result says it was not read (the sender was told it was queued)."""

    started, sent = anyio.Event(), anyio.Event()

    async def child(request: ModelRequest) -> object:
        if request.tools:  # its one turn ends once the lead has sent its message
            started.set()
            await sent.wait()
            return ScriptedModel.tool_call("list_files", {})
        return ScriptedModel.text("last answer")

    spec = SubagentSpec(name="slow", description="Slow.", model="slow", max_turns=1)

    async def lead_script(request: ModelRequest) -> object:
        outputs = [str(m.content) for m in request.messages]
        run = next((RUN.search(o).group(0) for o in outputs if RUN.search(o)), "")
        steps = len([m for m in request.messages if m.role == "assistant"])
        if steps == 0:
            return ScriptedModel.tool_call(
                "agent_spawn", {"agent": "slow", "task": "go", "timeout_seconds": 0}
            )
        if steps == 1:  # sent while the child's one turn runs
            await started.wait()
            return ScriptedModel.tool_call("agent_send", {"run": run, "message": "also this"})
        if steps == 2:  # agent_send has run
            sent.set()
            return ScriptedModel.tool_call("agent_wait", {"run": run, "timeout_seconds": 30})
        return "done"

    lead_model = ScriptedModel(lead_script)
    lead = HarnessAgent(
        "lead",
        lead_model,
        "Lead.",
        specs=[spec],
        models={"slow": ScriptedModel(child)},
        store=InMemoryStore(),
        workspace=tmp_path / "ws",
    )
    try:
        await lead.call("go", CTX)
    finally:
        await lead.aclose()
    sent = str(lead_model.requests[2].messages[-1].content)
    assert "queued" in sent.lower(), sent
    waited = str(lead_model.requests[3].messages[-1].content)
    assert "last answer" in waited and "were not read" in waited, waited
    assert "stopped at its turn limit (1 turns" in waited
