"""Run under AgentScope 2.0.11 (the anchor venv): store sessions with its own storage classes.

    python write_sessions.py USER redis HOST PORT DB PREFIX
    python write_sessions.py USER sql SQLALCHEMY_ASYNC_URL

Prints one JSON object: ``{"sessions": {name: record dump}}`` as AgentScope's ``get_session``
returns them after writing, so the test compares the import against what AgentScope itself reads.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from agentscope.app.storage import (
    ChannelOrigin,
    ChatModelConfig,
    RedisStorage,
    ScheduleOrigin,
    SessionConfig,
)
from agentscope.message import (
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from agentscope.permission import (
    PermissionBehavior,
    PermissionContext,
    PermissionMode,
    PermissionRule,
)
from agentscope.state import AgentState, Task

USER = sys.argv[1]


def _rule(tool: str, content: str | None, behavior: PermissionBehavior) -> PermissionRule:
    return PermissionRule(tool_name=tool, rule_content=content, behavior=behavior, source="user")


async def _tools_state() -> AgentState:
    state = AgentState(session_id="ignored-by-storage")
    state.context.append(Msg(name="user", role="user", content=[TextBlock(text="list the repo")]))
    state.reply_id = "reply-tools"
    state.cur_iter = 3
    state.append_context(
        "coder",
        [
            ThinkingBlock(thinking="I should run ls"),
            TextBlock(text="Looking."),
            ToolCallBlock(id="call-1", name="Bash", input='{"command": "ls"}', state="finished"),
        ],
    )
    state.append_context(
        "coder",
        [ToolResultBlock(id="call-1", name="Bash", output="README.md\nsrc", state="success")],
    )
    state.append_context(
        "coder",
        [ToolCallBlock(id="call-2", name="Read", input='{"file_path": "/x"}', state="finished")],
    )
    state.append_context(
        "coder",
        [
            ToolResultBlock(
                id="call-2", name="Read", output=[TextBlock(text="no such file")], state="error"
            ),
            TextBlock(text="Done: README.md and src."),
        ],
    )
    state.permission_context = PermissionContext(
        mode=PermissionMode.ACCEPT_EDITS,
        allow_rules={"Bash": [_rule("Bash", "git:*", PermissionBehavior.ALLOW)]},
        deny_rules={"Write": [_rule("Write", "secrets/**", PermissionBehavior.DENY)]},
    )
    await state.tool_context.cache_file("/repo/README.md", ["# hi\n", "there\n"], mtime=1.0)
    state.tool_context.activated_groups = ["files"]
    state.tasks_context.tasks = [
        Task(subject="list repo", description="ls it", metadata={}, state="completed", id="t1")
    ]
    state.middle_context = {"my_middleware": {"turns": 2}}
    return state


def _text_state() -> AgentState:
    state = AgentState()
    state.reply_id = "reply-text"
    state.cur_iter = 1
    state.summary = "Earlier: greetings."
    state.context = [
        Msg(name="user", role="user", content=[TextBlock(text="my name is Su")], id="m1"),
        Msg(name="helper", role="assistant", content=[TextBlock(text="Hi Su")], id="reply-text"),
    ]
    return state


def _asking_state() -> AgentState:
    state = AgentState()
    state.reply_id = "reply-ask"
    state.context.append(Msg(name="user", role="user", content=[TextBlock(text="delete tmp")]))
    state.append_context(
        "coder",
        [
            ToolCallBlock(
                id="call-ask", name="Bash", input='{"command": "rm -r tmp"}', state="asking"
            )
        ],
    )
    return state


def _media_state() -> AgentState:
    state = AgentState()
    state.context = [
        Msg(
            name="user",
            role="user",
            content=[
                TextBlock(text="what is this?"),
                DataBlock(source=Base64Source(data="aGVsbG8=", media_type="image/png")),
            ],
            id="m-media",
        ),
        Msg(
            name="helper",
            role="assistant",
            content=[HintBlock(hint="be brief", source="system"), TextBlock(text="A picture.")],
            id="m-answer",
        ),
    ]
    return state


def _dont_ask_state() -> AgentState:
    state = AgentState()
    state.permission_context = PermissionContext(mode=PermissionMode.DONT_ASK)
    return state


def _submitted_state() -> AgentState:
    state = AgentState()
    state.reply_id = "reply-ext"
    state.append_context(
        "coder",
        [ToolCallBlock(id="call-ext", name="remote", input="{}", state="submitted")],
    )
    return state


async def write(storage: Any) -> dict[str, Any]:
    config = SessionConfig(
        workspace_id="ws-1",
        name="first chat",
        chat_model_config=ChatModelConfig(
            type="openai", credential_id="cred-1", model="gpt-4o", parameters={"temperature": 0.2}
        ),
    )
    made: dict[str, str] = {}

    async def put(name: str, agent: str, state: AgentState, **kw: Any) -> None:
        record = await storage.upsert_session(USER, agent, config, state, f"s-{name}", **kw)
        made[name] = (agent, record.id)

    await put("text", "helper", _text_state())
    await put("tools", "coder", await _tools_state(), origin=ScheduleOrigin(schedule_id="daily"))
    await put("asking", "coder", _asking_state())
    await put(
        "media",
        "helper",
        _media_state(),
        origin=ChannelOrigin(channel_id="slack", chat_id="C1", chat_name="general"),
    )
    await put("dont_ask", "helper", _dont_ask_state())
    await put("submitted", "coder", _submitted_state())
    await storage.set_session_team_id(USER, "s-tools", "team-7")
    out = {}
    for name, (agent, sid) in made.items():
        record = await storage.get_session(USER, agent, sid)
        out[name] = json.loads(record.model_dump_json())
    return {"sessions": out}


async def main() -> None:
    if sys.argv[2] == "redis":
        host, port, db, prefix = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
        templates = {
            name: value.replace("agentscope:", prefix + ":", 1)
            for name, value in RedisStorage.KeyConfig().model_dump().items()
        }
        storage = RedisStorage(
            host=host, port=port, db=db, key_config=RedisStorage.KeyConfig(**templates)
        )
    else:
        from agentscope.app.storage import AsyncSQLAlchemyStorage

        storage = AsyncSQLAlchemyStorage(sys.argv[3])
    async with storage:
        result = await write(storage)
    print(json.dumps(result))


asyncio.run(main())
