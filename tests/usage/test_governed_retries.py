"""Retries of a governed model call go through the shared rate limit (agentscope_teams/model/retries.py):
each attempt takes a turn, and a 429 pauses every process sharing the limit before anyone sends
again. Against a real local chat-completions server (tests/model/fake_openai.py)."""

from __future__ import annotations

import logging
import multiprocessing
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from agentscope_teams.agent.config import ReActConfig
from agentscope_teams.agent.react import ReActAgent
from agentscope_teams.errors import ModelServerError, RateLimitError
from agentscope_teams.model.openai import OpenAIChatModel
from agentscope_teams.state import AgentState
from agentscope_teams.store import store_from_url
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.usage import Budget, RateLimit, UsageGovernor
from agentscope_teams.usage.backend import UsageBackend, usage_backend
from agentscope_teams.usage.limiter import limiter_key
from agentscope_teams.usage.rules import Admission, Admitted

from ..backends import StoreSpec
from ..model.fake_openai import FakeOpenAI, Received, Reply, completion
from .workers import governed_reply_child

#: Turns 10 ms apart, 10 at once: only a hold-off ever makes a call wait.
LIMIT = RateLimit(requests_per_minute=6000, burst=10, margin=0.0, max_wait=60)
SLOW_DOWN = {"error": {"message": "slow down", "type": "rate_limit"}}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def sdk_retries() -> Iterator[list[str]]:
    """The retries the openai SDK announces itself ("Retrying request to ...")."""
    found: list[str] = []

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if str(record.msg).startswith("Retrying request"):
                found.append(record.getMessage())

    logger, recorder = logging.getLogger("openai._base_client"), Recorder(logging.INFO)
    level = logger.level
    logger.addHandler(recorder)
    logger.setLevel(logging.INFO)
    yield found
    logger.removeHandler(recorder)
    logger.setLevel(level)


def count_turns(backend: UsageBackend) -> list[Admitted]:
    """Every answer the store gives an admission of the limiter (spied on the real backend)."""
    answers: list[Admitted] = []
    real = backend.admit

    async def admit(a: Admission) -> Admitted:
        answer = await real(a)
        if a.key is not None:
            answers.append(answer)
        return answer

    backend.admit = admit  # type: ignore[method-assign]
    return answers


def granted(answers: list[Admitted]) -> int:
    return sum(1 for a in answers if a.refusal is None and a.wait_ms <= 0)


def model_of(fake: FakeOpenAI, name: str = "fake-model", **kw: Any) -> OpenAIChatModel:
    kw.setdefault("max_retries", 3)
    return OpenAIChatModel(name, api_key="k", base_url=fake.url, **kw)


async def reply(model: OpenAIChatModel, gov: UsageGovernor | None, text: str = "hi") -> str:
    agent = ReActAgent("a", model, config=ReActConfig(stream_model=False))
    state = AgentState(session_id="s1")
    if gov is None:
        return (await agent.reply(text, state)).get_text_content()
    with gov.bind():
        return (await agent.reply(text, state)).get_text_content()


async def test_a_governed_429_is_retried_after_the_hold_off_with_a_turn_each(
    fake: FakeOpenAI, sdk_retries: list[str]
) -> None:
    fake.add(Reply(429, SLOW_DOWN, headers={"Retry-After": "1"}), Reply(body=completion("ok")))
    gov = UsageGovernor(InMemoryStore(), rate_limit=LIMIT)
    answers = count_turns(gov.backend)
    async with model_of(fake) as model:
        assert await reply(model, gov) == "ok"
        limiter = await gov.backend.read(limiter_key(model))
    assert len(fake.requests) == 2
    # the 429 paused the shared limiter, and the retry was sent once that pause was over
    assert limiter is not None and limiter["hold"] > fake.requests[0].at * 1000
    assert fake.requests[1].at * 1000 >= limiter["hold"]
    assert granted(answers) == 2  # one turn per request sent
    assert sdk_retries == []  # the SDK sent one request each time


async def test_a_governed_5xx_is_retried_with_a_turn_and_no_hold_off(
    fake: FakeOpenAI, sdk_retries: list[str]
) -> None:
    fake.add(Reply(503, {"error": {"message": "busy"}}), Reply(body=completion("ok")))
    gov = UsageGovernor(InMemoryStore(), rate_limit=LIMIT)
    answers = count_turns(gov.backend)
    async with model_of(fake) as model:
        assert await reply(model, gov) == "ok"
        limiter = await gov.backend.read(limiter_key(model))
    assert len(fake.requests) == 2 and granted(answers) == 2 and sdk_retries == []
    assert limiter is not None and limiter["hold"] == 0  # a 5xx is no rate signal


async def test_retry_after_0_means_retry_now_not_a_one_second_hold(fake: FakeOpenAI) -> None:
    fake.add(
        Reply(429, SLOW_DOWN, headers={"Retry-After": "0"}),
        Reply(body=completion("ok")),
    )
    gov = UsageGovernor(InMemoryStore(), rate_limit=LIMIT)
    answers = count_turns(gov.backend)
    async with model_of(fake, max_retries=0) as model:
        with pytest.raises(RateLimitError) as caught:
            await reply(model, gov)
        assert caught.value.retry_after == 0
        assert await reply(model, gov) == "ok"  # asked again at once: its turn is there
    assert [a.wait_ms for a in answers] == [0, 0]  # told to wait for nothing


async def test_a_429_asking_longer_than_max_wait_is_raised_at_once_and_shared(
    fake: FakeOpenAI,
) -> None:
    fake.add(Reply(429, SLOW_DOWN, headers={"Retry-After": "30"}), Reply(body=completion("ok")))
    gov = UsageGovernor(InMemoryStore(), rate_limit=LIMIT.model_copy(update={"max_wait": 5}))
    async with model_of(fake) as model:
        with pytest.raises(RateLimitError, match="after 1 attempt") as caught:
            await reply(model, gov)
        limiter = await gov.backend.read(limiter_key(model))
    assert caught.value.retry_after == 30 and len(fake.requests) == 1
    # every process sharing the key is paused for what the provider asked
    assert limiter is not None and limiter["hold"] >= fake.requests[0].at * 1000 + 29_000


async def test_a_5xx_retry_after_is_honoured_and_beyond_max_wait_not_retried(
    fake: FakeOpenAI,
) -> None:
    fake.add(Reply(503, {"error": {"message": "busy"}}, headers={"Retry-After": "30"}))
    fake.add(Reply(body=completion("ok")))
    gov = UsageGovernor(InMemoryStore(), rate_limit=LIMIT.model_copy(update={"max_wait": 5}))
    async with model_of(fake) as model:
        with pytest.raises(ModelServerError, match=r"HTTP 503 .* after 1 attempt"):
            await reply(model, gov)
        limiter = await gov.backend.read(limiter_key(model))
    assert len(fake.requests) == 1
    assert limiter is not None and limiter["hold"] == 0  # a 5xx pauses no other process


async def test_an_ungoverned_call_keeps_the_sdk_retries(
    fake: FakeOpenAI, sdk_retries: list[str]
) -> None:
    fast = {"retry-after-ms": "1"}
    fake.add(Reply(429, SLOW_DOWN, headers=fast), Reply(body=completion("ok")))
    fake.add(Reply(429, SLOW_DOWN, headers=fast), Reply(body=completion("ok")))
    # no governor, then a governor with a budget but no rate limit: the SDK retries both
    gov = UsageGovernor(InMemoryStore(), budgets={"session": Budget(max_tokens=10_000)})
    async with model_of(fake) as model:
        assert await reply(model, None) == "ok"
        assert await reply(model, gov) == "ok"
    assert len(fake.requests) == 4 and len(sdk_retries) == 2


def _prompt(r: Received) -> str:
    return str(r.body["messages"][-1]["content"])


async def _hold_of(url: str, key: str, deadline: float) -> float | None:
    """The limiter's hold-off time (ms) in the Redis store, once set (None by ``deadline``)."""
    async with store_from_url(url) as store:
        name = usage_backend(store)._limiter(key)  # type: ignore[attr-defined]
        while time.monotonic() < deadline:
            raw = await store.call(lambda c: c.hget(name, "hold"))
            if raw is not None and float(raw) > 0:
                return float(raw)
            await anyio.sleep(0.02)
    return None


@pytest.mark.parametrize("store_spec", ["redis"], indirect=True)
def test_a_second_process_waits_for_the_hold_off_of_a_429_another_got(
    store_spec: StoreSpec, fake: FakeOpenAI
) -> None:
    fake.add(Reply(429, SLOW_DOWN, headers={"Retry-After": "3"}))
    fake.add(Reply(body=completion("ok")), Reply(body=completion("ok")))
    name = "m-" + uuid.uuid4().hex[:8]
    key = limiter_key(model_of(fake, name))
    mp = multiprocessing.get_context("spawn")
    results = mp.Queue()
    events = {p: (mp.Event(), mp.Event()) for p in ("A", "B")}  # ready, go
    procs = [
        mp.Process(
            target=governed_reply_child,
            args=(store_spec.url, fake.url, name, LIMIT, p, *events[p], results),
        )
        for p in ("A", "B")
    ]
    for p in procs:
        p.start()
    try:
        for ready, _ in events.values():
            assert ready.wait(60), "a worker did not start"
        events["A"][1].set()
        # A's first request is answered 429: the pause it asks for is shared through Redis
        hold = anyio.run(_hold_of, store_spec.url, key, time.monotonic() + 20)
        events["B"][1].set()
        let_go = dict(results.get(timeout=60) for _ in procs)
    finally:
        for _, go in events.values():
            go.set()
        for p in procs:
            p.join(timeout=30)
    assert [p.exitcode for p in procs] == [0, 0]
    assert hold is not None, "the 429 was not shared through the store before A's retries ended"
    prompts = [_prompt(r) for r in fake.requests]
    assert sorted(prompts) == ["A", "A", "B"] and prompts[0] == "A"
    (b,) = [r for r in fake.requests if _prompt(r) == "B"]
    # B asked for its turn during the hold-off and was sent only after it: it waited
    assert let_go["B"] * 1000 < hold <= b.at * 1000
    assert all(r.at * 1000 >= hold for r in fake.requests[1:])


async def test_a_governed_anthropic_stream_waits_for_the_rate_limit_reset_it_was_sent(
    fake: FakeOpenAI,
) -> None:
    from datetime import UTC, datetime, timedelta

    from agentscope_teams.model.anthropic import AnthropicChatModel

    from ..model.test_anthropic_http import error, events

    text = (
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "ok"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    )  # fmt: skip
    gov = UsageGovernor(InMemoryStore(), rate_limit=LIMIT)
    answers = count_turns(gov.backend)
    url = fake.url.removesuffix("/v1")
    async with AnthropicChatModel("claude-test", api_key="k", base_url=url) as model:
        agent = ReActAgent("a", model, config=ReActConfig(stream_model=True))
        # no Retry-After: the requests limit is spent until its reset, 3 s from now
        reset = (datetime.now(UTC) + timedelta(seconds=3)).isoformat()
        spent = {"anthropic-ratelimit-requests-remaining": "0"}
        spent["anthropic-ratelimit-requests-reset"] = reset
        fake.add(Reply(429, error("rate_limit_error", "slow down"), headers=spent))
        fake.add(Reply(sse=events(*text)))
        with gov.bind():
            msg = await agent.reply("hi", AgentState(session_id="s1"))
        limiter = await gov.backend.read(limiter_key(model))
    assert msg.get_text_content() == "ok"
    assert len(fake.requests) == 2 and granted(answers) == 2
    assert limiter is not None and limiter["hold"] > fake.requests[0].at * 1000
    assert fake.requests[1].at * 1000 >= limiter["hold"]
