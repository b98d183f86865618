"""A governed call's model does its one-time lazy work before the call takes a rate-limit turn, so
a process's first request reaches the provider when the limiter placed it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.agent.react import ReActAgent
from agentscope_teams.message import TextBlock
from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.state import AgentState
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.usage import RateLimit, UsageGovernor

ROOT = Path(__file__).resolve().parents[2]


class _Lazy(ScriptedModel):
    """A model that records when it was warmed, beside the governor's store operations."""

    def __init__(self, seen: list[str]) -> None:
        super().__init__(lambda r: ModelResponse(content=[TextBlock(text="ok")], usage=Usage()))
        self.seen = seen

    def warm(self) -> None:
        self.seen.append("warm")

    async def generate(self, request: ModelRequest) -> ModelResponse:
        self.seen.append("send")
        return await super().generate(request)


async def _reply(limit: RateLimit | None, seen: list[str]) -> None:
    gov = UsageGovernor(InMemoryStore(), rate_limit=limit)
    admit = gov.backend.admit

    async def admitted(a: object) -> object:
        seen.append("turn")
        return await admit(a)  # type: ignore[arg-type]

    gov.backend.admit = admitted  # type: ignore[method-assign]
    agent = ReActAgent("a", _Lazy(seen), config=ReActConfig(stream_model=False))
    with gov.bind():
        await agent.reply("hi", AgentState(session_id="s"))
    await gov.aclose()


async def test_a_rate_limited_call_warms_its_model_before_it_takes_its_turn() -> None:
    seen: list[str] = []
    await _reply(RateLimit(requests_per_minute=600), seen)
    assert seen == ["warm", "turn", "send"]


async def test_a_call_without_a_rate_limit_does_not_warm_its_model() -> None:
    seen: list[str] = []
    await _reply(None, seen)
    assert "warm" not in seen and seen[-1] == "send"


def test_a_warmed_openai_model_imports_nothing_more_at_its_first_request() -> None:
    # a fresh interpreter: what the SDK imports lazily is still to import there
    script = textwrap.dedent(
        """
        import sys, anyio
        from tests.usage.provider import FakeProvider
        from agentscope_teams.message import UserMsg
        from agentscope_teams.model.base import ModelRequest
        from agentscope_teams.model.openai import OpenAIChatModel

        async def main(url):
            async with OpenAIChatModel("m", base_url=url, api_key="k") as m:
                if sys.argv[1] == "warm":
                    m.warm()
                    m.warm()  # once
                before = set(sys.modules)
                await m.generate(ModelRequest(messages=[UserMsg("t: hi")]))
                print(sorted(n for n in set(sys.modules) - before if n.startswith("openai")))

        with FakeProvider() as p:
            anyio.run(main, p.base_url)
        """
    )

    def new_modules(mode: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", script, mode], cwd=ROOT, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert new_modules("cold") != "[]"  # the SDK does import at its first request
    assert new_modules("warm") == "[]"
