"""``chat`` spans name the provider of an SDK-based model (``gen_ai.provider.name``), over HTTP."""

from __future__ import annotations

from pathlib import Path

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.model import OpenAIChatModel, ScriptedModel
from agentscope_teams.model.anthropic import AnthropicChatModel
from agentscope_teams.tracing import names

from ..model.fake_openai import FakeOpenAI, Reply, chunk
from ..model.test_anthropic_http import block_delta, block_start, events
from .helpers import Spans, attrs, memory_provider

CTX = RuntimeContext(session_id="s1", user_id="u1")


async def test_chat_spans_carry_the_provider_of_each_sdk_model(tmp_path: Path) -> None:
    provider, exporter = memory_provider()
    with FakeOpenAI() as server:
        server.add(Reply(sse=[chunk({"content": "hi"}, "stop"), "[DONE]"]))
        text = block_delta(0, {"type": "text_delta", "text": "hello"})
        server.add(Reply(sse=events(block_start(0, {"type": "text", "text": ""}), text)))
        models = [
            OpenAIChatModel("gpt-test", api_key="sk-x", base_url=server.url, provider="dashscope"),
            AnthropicChatModel(
                "claude-test", api_key="sk-ant-x", base_url=server.url.removesuffix("/v1")
            ),
        ]
        for model in models:
            agent = HarnessAgent("bot", model, store=f"file://{tmp_path}", tracer_provider=provider)
            async with agent:
                await agent.call("hi", CTX.with_session(model.model_name))
    spans = Spans(exporter.get_finished_spans())
    assert attrs(spans.one("chat gpt-test"))[names.PROVIDER] == "dashscope"
    assert attrs(spans.one("chat claude-test"))[names.PROVIDER] == "anthropic"


async def test_a_model_without_a_provider_leaves_the_attribute_out(tmp_path: Path) -> None:
    provider, exporter = memory_provider()
    agent = HarnessAgent(
        "bot", ScriptedModel(["hi"]), store=f"file://{tmp_path}", tracer_provider=provider
    )
    await agent.call("hi", CTX)
    [chat] = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert names.PROVIDER not in attrs(chat)
