"""What the sessions ``write_sessions.py`` stored must look like once imported."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

from agentscope_teams.message import DataBlock, TextBlock, ToolResultBlock, ToolUseBlock
from agentscope_teams.sessions import (
    ChannelOrigin,
    ScheduleOrigin,
    SessionRecord,
    SessionStorage,
    UserOrigin,
)

CONVERTED = ("asking", "media", "text", "tools")
REFUSED = {"dont_ask": "permission mode 'dont_ask'", "submitted": "state 'submitted'"}
AGENT = {"text": "helper", "media": "helper", "dont_ask": "helper"}


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone().astimezone(UTC)


async def _get(storage: SessionStorage, user: str, org: str | None, name: str) -> SessionRecord:
    record = await storage.get_session(user, AGENT.get(name, "coder"), f"s-{name}", org_id=org)
    assert record is not None, f"session s-{name} was not imported"
    return record


async def check_imported(
    storage: SessionStorage, user: str, org: str | None, written: dict[str, Any]
) -> None:
    """Compare every imported session with what AgentScope read back after writing it."""
    for name in REFUSED:
        assert (
            await storage.get_session(user, AGENT.get(name, "coder"), f"s-{name}", org_id=org)
            is None
        )
    for name in CONVERTED:
        record, raw = await _get(storage, user, org, name), written[name]
        assert record.id == raw["id"] == f"s-{name}"
        assert record.created_at == _at(raw["created_at"])
        assert record.config.workspace_id == "ws-1" and record.config.name == "first chat"
        assert record.config.chat_model_config is not None
        assert record.config.chat_model_config.parameters == {"temperature": 0.2}
        assert record.state.reply_id == raw["state"]["reply_context"]["reply_id"]
        assert record.state.cur_iter == raw["state"]["reply_context"]["cur_iter"]

    text = await _get(storage, user, org, "text")
    assert text.origin == UserOrigin() and text.team_id is None
    assert text.state.summary == "Earlier: greetings."
    assert [(m.id, m.role, m.name, m.get_text_content()) for m in text.state.context] == [
        ("m1", "user", "user", "my name is Su"),
        ("reply-text", "assistant", "helper", "Hi Su"),
    ]

    tools = await _get(storage, user, org, "tools")
    assert tools.origin == ScheduleOrigin(schedule_id="daily") and tools.team_id == "team-7"
    assert (tools.state.reply_id, tools.state.cur_iter) == ("reply-tools", 3)
    shape = [(m.role, m.name, m.blocks) for m in tools.state.context[1:]]
    assert shape == [
        (
            "assistant",
            "coder",
            [
                TextBlock(text="Looking."),
                ToolUseBlock(id="call-1", name="Bash", input={"command": "ls"}),
            ],
        ),
        (
            "user",
            "tool",
            [ToolResultBlock(tool_use_id="call-1", name="Bash", output="README.md\nsrc")],
        ),
        ("assistant", "coder", [ToolUseBlock(id="call-2", name="Read", input={"file_path": "/x"})]),
        (
            "user",
            "tool",
            [
                ToolResultBlock(
                    tool_use_id="call-2", name="Read", output="no such file", is_error=True
                )
            ],
        ),
        ("assistant", "coder", [TextBlock(text="Done: README.md and src.")]),
    ]
    assert tools.state.context[-1].id == "reply-tools"  # the reply's message keeps the reply id
    assert (
        tools.state.context[1].metadata["agentscope_thinking"][0]["thinking"] == "I should run ls"
    )
    assert not tools.state.awaiting_tool_calls()
    permissions = tools.state.permission_context
    assert permissions.mode == "accept_edits"
    assert {(r.tool, r.behavior, r.pattern) for r in permissions.rules} == {
        ("Write", "deny", "secrets/**"),
        ("Bash", "allow", "git"),
        ("Bash", "allow", "git *"),
    }
    digest = hashlib.sha256(b"# hi\nthere\n").hexdigest()
    assert tools.state.tool_context.file_read_cache == {"/repo/README.md": digest}
    assert tools.state.tool_context.active_groups == ["files"]
    assert [(t.id, t.title, t.status) for t in tools.state.tasks_context.tasks] == [
        ("t1", "list repo", "completed")
    ]
    assert tools.state.middle_context["my_middleware"] == {"turns": 2}
    assert tools.state.middle_context["agentscope"]["tasks"][0]["description"] == "ls it"
    by_schedule = await storage.list_sessions_by_schedule(user, "daily", org_id=org)
    assert [r.id for r in by_schedule] == ["s-tools"]

    asking = await _get(storage, user, org, "asking")
    assert asking.state.awaiting_confirmation == ["call-ask"]
    assert [c.id for c in asking.state.awaiting_tool_calls("coder")] == ["call-ask"]
    assert asking.state.context[-1].id == "reply-ask"

    media = await _get(storage, user, org, "media")
    assert media.origin == ChannelOrigin(channel_id="slack", chat_id="C1", chat_name="general")
    question, hint, answer = media.state.context
    assert question.blocks == [
        TextBlock(text="what is this?"),
        DataBlock(media_type="image/png", data="aGVsbG8="),
    ]
    assert (hint.role, hint.name, hint.get_text_content()) == ("user", "system", "be brief")
    assert (answer.id, answer.role, answer.get_text_content()) == (
        "m-answer",
        "assistant",
        "A picture.",
    )
