"""What a team member is refused in each permission mode, pinned: a member has nobody to ask,
so every call that would ask is refused at once (and listed for its record); dontAsk mode's own
refusal wins there; deny rules and plan mode refuse as for any agent; nothing ever asks."""

from __future__ import annotations

from typing import Any

import pytest

from agentscope_teams import SubagentSpec
from agentscope_teams.sandbox import UnsafeHostSandbox
from agentscope_teams.state import PermissionMode, PermissionRule
from agentscope_teams.teams.member.builder import member_engine
from agentscope_teams.teams.rules.models import Member
from agentscope_teams.tools import PermissionEngine, Tool
from agentscope_teams.tools.filesystem import filesystem_tools
from agentscope_teams.tools.plan import plan_tools
from agentscope_teams.tools.shell import shell_tools

TOOLS: dict[str, Tool] = {
    t.name: t for t in [*filesystem_tools(), *plan_tools(), *shell_tools(UnsafeHostSandbox())]
}
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("read_file", {"file_path": "a.py"}),
    ("write_file", {"file_path": "a.py", "content": "x"}),
    ("bash", {"command": "make test"}),
    ("bash", {"command": "rm -rf build"}),
    ("ask_user_question", {"questions": []}),
]
NOBODY = "no one can approve"
DONT_ASK = "and the agent runs in dontAsk mode"
PLAN = "denied: the agent is in plan mode"
RULE = "denied by rule deny"
#: mode -> (behavior, start of the refusal) of each call in CALLS; no call ever asks.
EXPECTED: dict[str, list[tuple[str, str]]] = {
    "default": [("allow", ""), ("allow", ""), ("deny", NOBODY), ("deny", RULE), ("deny", NOBODY)],
    "accept_edits": [("allow", ""), ("allow", ""), ("deny", NOBODY), ("deny", RULE),
                     ("deny", NOBODY)],
    "plan": [("allow", ""), ("deny", PLAN), ("deny", PLAN), ("deny", RULE), ("deny", NOBODY)],
    "dont_ask": [("allow", ""), ("allow", ""), ("deny", DONT_ASK), ("deny", RULE),
                 ("deny", DONT_ASK)],
    "bypass": [("allow", ""), ("allow", ""), ("allow", ""), ("deny", RULE), ("deny", NOBODY)],
}  # fmt: skip


@pytest.mark.parametrize("mode", list(EXPECTED))
def test_what_a_member_is_refused_in_each_mode(mode: PermissionMode) -> None:
    lead = PermissionEngine([PermissionRule(tool="bash", behavior="deny", pattern="rm *")])
    spec = SubagentSpec(name="coder", description="Writes code", system_prompt="Code.")
    engine = member_engine(spec, lead, Member(name="c1", spec="coder", permission_mode=mode))
    seen = [engine.check(TOOLS[name], args) for name, args in CALLS]
    got = [(d.behavior, d.reason) for d in seen]
    for (behavior, reason), (want, start) in zip(got, EXPECTED[mode], strict=True):
        assert behavior == want, got
        assert start in reason, got
    asked = [
        name for (name, _), (_, start) in zip(CALLS, EXPECTED[mode], strict=True) if start == NOBODY
    ]
    assert engine.refused == asked
    for _, reason in (g for g in got if NOBODY in g[1]):
        assert reason.endswith(
            "ask the lead with sendMessage (the lead sees this refusal in your record)"
        )


def test_an_engine_with_someone_to_ask_still_asks() -> None:
    """The option is the member's alone: the lead's own engine asks and records nothing."""
    lead = PermissionEngine()
    assert lead.check(TOOLS["bash"], {"command": "make test"}).behavior == "ask"
    assert lead.refused == []
