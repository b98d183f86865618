"""``OfflineReviewModel``: a deterministic :class:`ChatModel` that plays the code-review team. No LLM.

It lets ``agentscope-teams review`` run the whole team (lead and members, through the same tools a real
model would call) on a machine without an API key. Every step is decided from the request alone, so
one instance serves every agent of the team concurrently:

- **Which role.** The tools offered and the calls already made: ``createTeam`` offered (or team-building
  calls in the conversation) means the lead; ``claimTask`` offered, or a system prompt of a reviewer spec
  ("You are the security reviewer ..."), means a member, whose area comes from that prompt.
- **Where in the script.** Only the current turn counts: the messages after the agent's last final
  answer. The tool calls in it, paired with their results, say what was done and what came back.
- **What next.** The lead lists ``**/*.py`` with ``glob_files``, calls ``createTeam``, ``spawnMember`` for
  each reviewer spec, ``assignTask`` once per member per group of about three files, ``waitForTeam``
  until no task is open, and answers with the review report (see :mod:`.offline_lead`).
  A member claims a task, reads its files with ``read_file``, rebuilds the sources from the
  line-numbered output, analyzes them with :mod:`agentscope_teams.review` (ruff, bandit and a few
  rules of this project, through the model's :class:`~.cache.AnalysisCache`, so the members share
  one analysis per file), tells teammates what it noticed in their area, completes the task with
  its own findings and claims again (see :mod:`.offline_member`).

When the request offers no tools (the step limit was reached) it answers with text. A member that
lost sight of its claim finds the tasks it holds with ``listTasks`` and claims them again.

Run it with context compression off (``ReActConfig(compression=CompressionConfig(enabled=False))``, as
``agentscope-teams review`` does): it has no context window, and compression would remove the very
messages it reads its place from. Compression requests still get a short extract of the transcript.

Get one with ``model_from_string("offline")`` (declared as an entry point of the package, so the
model factory imports this module on first use without naming it; its cache is the shared
directory of :func:`~.cache.default_cache_dir`) or ``OfflineReviewModel()``
(a cache of this process only).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from ..message import Msg, TextBlock, ToolResultBlock, ToolUseBlock, new_id
from ..model.base import ModelRequest, ModelResponse, StreamItem, Usage
from ..model.scripted import replay
from ..teams.member.work import WAKE
from .cache import AnalysisCache, default_cache_dir
from .offline_lead import lead_step
from .offline_member import Analyses, NeedsAnalysis, member_role, member_step
from .transcript import Call, Step

MODEL_NAME = "offline-review (deterministic, no LLM)"
LEAD_TOOLS = frozenset({"createTeam", "spawnMember", "assignTask", "waitForTeam"})
_SUMMARY_MARK = "\n\n## Summary of the earlier conversation"
UNSUPPORTED = (
    "I am the offline review model: deterministic static analysis, not an LLM. I only play the "
    "code-review team of `agentscope-teams review PATH` (the lead and its reviewers); set an API key "
    "or pass --model to use a real model for anything else."
)


class OfflineReviewModel:
    """Plays the lead and the members of the code-review team; see the module docs.

    ``cache_dir``: where analyses are shared with other processes (None: this process only)."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.cache = AnalysisCache(cache_dir)

    @property
    def model_name(self) -> str:
        return MODEL_NAME

    def __repr__(self) -> str:
        return "OfflineReviewModel()"

    async def generate(self, request: ModelRequest) -> ModelResponse:
        step = decide(request)
        if isinstance(step, NeedsAnalysis):
            step = decide(request, await self.cache.findings(step.sources))
        assert isinstance(step, Step)
        content: list[TextBlock | ToolUseBlock] = [TextBlock(text=step.text)] if step.text else []
        content += [
            ToolUseBlock(id=new_id("call_"), name=name, input=dict(args))
            for name, args in step.calls
        ]
        out_chars = len(step.text) + len(json.dumps([list(c) for c in step.calls]))
        usage = Usage(input_tokens=_size(request) // 4, output_tokens=out_chars // 4)
        return ModelResponse(
            content=content,
            usage=usage,
            stop_reason="tool_use" if step.calls else "end_turn",
            model=MODEL_NAME,
        )

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """Word-sized text deltas, one delta per tool call, then the response."""
        for item in replay(await self.generate(request)):
            yield item


def offline_model() -> OfflineReviewModel:
    """A new :class:`OfflineReviewModel` sharing the cache directory of
    :func:`~.cache.default_cache_dir`: the builder of the model string ``"offline"``."""
    return OfflineReviewModel(default_cache_dir())


def decide(request: ModelRequest, analyses: Analyses | None = None) -> Step | NeedsAnalysis:
    """The next step for ``request`` (pure: the same request and ``analyses`` always give the same
    step); :class:`NeedsAnalysis` when a member needs the findings of the files it read."""
    if request.metadata.get("purpose") == "compression":
        return Step(_compress(request.messages))
    system = request.system_prompt.split(_SUMMARY_MARK, 1)[0]
    turn = current_turn(request.messages)
    calls = tool_calls(turn)
    offered = {t.name for t in request.tools}
    can_act = bool(offered)
    if "createTeam" in offered or LEAD_TOOLS & {c.name for c in calls}:
        texts = _texts(turn)
        first = texts[0] if texts else ""
        return lead_step(system, first, calls, model_label=MODEL_NAME, can_act=can_act)
    role = member_role(system)
    if "claimTask" in offered or role.spec is not None or any(c.name == "claimTask" for c in calls):
        texts = _texts(turn)
        owned = woken_for(turn)
        return member_step(role, owned, calls, texts[1:], can_act=can_act, analyses=analyses)
    return Step(UNSUPPORTED)


def current_turn(messages: Sequence[Msg]) -> list[Msg]:
    """The messages after the last final answer (an assistant message without tool calls)."""
    start = 0
    for i, msg in enumerate(messages):
        if msg.role == "assistant" and not msg.tool_uses():
            start = i + 1
    return list(messages[start:])


def tool_calls(messages: Sequence[Msg]) -> list[Call]:
    """Every tool call of ``messages`` in order, with its result when the result is there."""
    results: dict[str, ToolResultBlock] = {
        r.tool_use_id: r for m in messages for r in m.tool_results()
    }
    out: list[Call] = []
    for m in messages:
        if m.role != "assistant":
            continue
        for use in m.tool_uses():
            r = results.get(use.id)
            out.append(
                Call(
                    name=use.name,
                    input=dict(use.input),
                    output=None if r is None else r.output,
                    is_error=bool(r is not None and r.is_error),
                    data=None if r is None else r.data,
                )
            )
    return out


def woken_for(messages: Sequence[Msg]) -> list[str]:
    """The task ids a member's wake-up message says it owns (its metadata, see ``teams.work``)."""
    for m in messages:
        wake = m.metadata.get(WAKE)
        if isinstance(wake, dict):
            return [str(t) for t in wake.get("own", [])]
    return []


def _texts(messages: Sequence[Msg]) -> list[str]:
    """The text of the non-assistant messages that are not tool results (instruction, injections)."""
    return [
        text
        for m in messages
        if m.role != "assistant" and not m.tool_results() and (text := m.get_text_content())
    ]


def _size(request: ModelRequest) -> int:
    return len(request.system_prompt) + sum(
        len(m.content) if isinstance(m.content, str) else len(m.model_dump_json())
        for m in request.messages
    )


def _compress(messages: Sequence[Msg]) -> str:
    """A deterministic "summary": the tool calls and short texts of the transcript, newest last."""
    text = "\n".join(m.get_text_content() for m in messages)
    keep = [line[:300] for line in text.splitlines() if line.startswith(("assistant", "user"))]
    return "Summary of the earlier work (offline model extract):\n" + "\n".join(keep[-40:])
