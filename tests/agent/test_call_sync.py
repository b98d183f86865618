"""``call_sync``: a blocking call from a plain script, refused inside a running event loop."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel, SyncCallInsideLoopError

from ..model.fake_openai import FakeOpenAI, Reply, chunk
from .output_helpers import Finding, Report

SCRIPT = textwrap.dedent(
    """
    import os
    from agentscope_teams import HarnessAgent, RuntimeContext
    from agentscope_teams.model import OpenAIChatModel

    model = OpenAIChatModel("fake-model", api_key="sk-x", base_url=os.environ["FAKE_URL"])
    ctx = RuntimeContext(session_id="s1", user_id="u1")
    with HarnessAgent("bot", model, "be brief", store=os.environ["STORE_URL"]) as agent:
        print("first:", agent.call_sync("hello", ctx).get_text_content())
        print("second:", agent.call_sync("again", ctx).get_text_content())
        state = agent._sync.run(lambda: agent.get_agent_state(ctx))
        print("messages:", len(state.context))
    """
)


def test_call_sync_from_a_plain_script(tmp_path: Path) -> None:
    with FakeOpenAI() as fake:
        fake.add(
            *[Reply(sse=[chunk({"content": t}, "stop"), "[DONE]"]) for t in ("hi", "hi again")]
        )
        env = {**os.environ, "FAKE_URL": fake.url, "STORE_URL": f"file://{tmp_path / 'store'}"}
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120
        )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["first: hi", "second: hi again", "messages: 4"]
    # the second request carried the first exchange: the state was saved between the calls
    second = [m["content"] for m in fake.requests[1].body["messages"]]
    assert second[1:] == ["hello", "hi", "again"]


async def test_call_sync_inside_a_running_loop_is_refused(tmp_path: Path) -> None:
    model = ScriptedModel(["never used"])
    agent = HarnessAgent("bot", model, store=f"file://{tmp_path}")
    with pytest.raises(SyncCallInsideLoopError, match=r"use await agent\.call\(\.\.\.\) there"):
        agent.call_sync("hello", RuntimeContext(session_id="s1", user_id="u1"))
    assert model.requests == []
    with pytest.raises(SyncCallInsideLoopError, match=r"await agent\.aclose\(\)"):
        agent.close_sync()


def test_call_sync_returns_a_typed_output(tmp_path: Path) -> None:
    data = {"findings": [{"file": "a.py", "line": 3, "message": "unused import"}], "summary": "1"}
    model = ScriptedModel([ScriptedModel.final_result(data)])
    ctx = RuntimeContext(session_id="s1", user_id="u1")
    with HarnessAgent("bot", model, store=f"file://{tmp_path}", builtin_tools=False) as agent:
        msg = agent.call_sync("review a.py", ctx, output_type=Report)
    assert isinstance(msg.output, Report)
    assert msg.output.findings == [Finding(file="a.py", line=3, message="unused import")]
    assert model.requests[0].tools[-1].parameters == Report.model_json_schema()
