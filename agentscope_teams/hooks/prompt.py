"""Running ``type: prompt`` and ``type: agent`` hooks: a model judges, answering
``{"ok": ..., "reason": ...}``.

The hook's ``prompt`` gets the event JSON in place of ``$ARGUMENTS`` (appended when it has none,
as Claude Code does). The model is the hook's ``model`` (a model name, resolved as a spec's
``model:`` is: a project file may not name the operator-only ``python:`` / ``scripted:``
schemes) or else the model of the agent the event belongs to; Claude Code's default is a small
fast model, which here is whatever the agent runs unless the hook names one. A prompt hook is one
model call; an agent hook is a verifier agent with read-only file tools, which the agent layer
runs (:data:`AgentRunner`, given to :meth:`~.runner.Hooks.fire`). The answer must be that JSON
object (a fenced ```json block is accepted); anything else, a model error or a timeout is a
non-blocking error naming the hook. :func:`~.outcome.from_verdict` maps ``ok: false``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from ..errors import AgentScopeTeamsError
from ..message import UserMsg
from ..model.base import ChatModel, ModelRequest
from ..model.factory import model_from_spec, model_from_string
from .hook import Hook
from .outcome import HookOutcome, failed, from_verdict

__all__ = ["SYSTEM_PROMPT", "AgentRunner", "JudgeModels", "judge", "verdict"]

SYSTEM_PROMPT = (
    "You are evaluating a hook condition for an AI agent. Judge whether the condition in the "
    'user message is met. Answer with only a JSON object: {"ok": true, "reason": ""} if it is, '
    '{"ok": false, "reason": "<why, addressed to the agent>"} if it is not.'
)

AgentRunner = Callable[[str, str, ChatModel], Awaitable[str]]
"""Runs a verifier agent: ``(system_prompt, prompt, model)`` -> its final answer's text."""

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)


def verdict(text: str) -> tuple[bool, str] | None:
    """``(ok, reason)`` of a model's answer, or None when it is not ``{"ok": bool, ...}``."""
    text = text.strip()
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group(1)
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("ok"), bool):
        return None
    reason = data.get("reason")
    return data["ok"], reason if isinstance(reason, str) else ""


#: The models hooks name, built once per hook set (a hook fires on every tool call: building
#: the model each time would open a new provider client each time): ``(name, from a file)``.
JudgeModels = dict[tuple[str, bool], ChatModel]


def _model(hook: Hook, default: ChatModel | None, built: JudgeModels) -> ChatModel | None:
    if hook.model is None:
        return default
    key = (hook.model, hook.source is not None)
    if key not in built:  # a file's hook may not name an operator-only scheme
        build = model_from_spec if hook.source is not None else model_from_string
        built[key] = build(hook.model)
    return built[key]


def _text(prompt: str, payload: dict[str, Any]) -> str:
    arguments = json.dumps(payload, ensure_ascii=False, default=str)
    if "$ARGUMENTS" not in prompt:
        return f"{prompt}\n\n{arguments}"
    return prompt.replace("$ARGUMENTS", arguments)


async def _generate(system: str, text: str, model: ChatModel) -> str:
    request = ModelRequest(system_prompt=system, messages=[UserMsg(text)])
    return (await model.generate(request)).text


async def judge(
    hook: Hook,
    payload: dict[str, Any],
    model: ChatModel | None,
    runner: AgentRunner | None = None,
    built: JudgeModels | None = None,
) -> HookOutcome:
    """Ask ``hook``'s model (one call, or the verifier ``runner`` for an agent hook) about
    ``payload``; its verdict as an outcome. ``built``: the models hooks named so far, kept by
    the caller (:class:`~.runner.Hooks`) so that each is built once."""
    assert hook.prompt is not None
    try:
        chosen = _model(hook, model, {} if built is None else built)
    except AgentScopeTeamsError as exc:
        return failed(hook.label, f"cannot use model {hook.model!r}: {exc}")
    if chosen is None:
        return failed(hook.label, "has no model to ask: give the hook a model: name")
    ask = runner if hook.kind == "agent" and runner is not None else _generate
    answer = None
    try:
        with anyio.move_on_after(hook.timeout):
            answer = await ask(SYSTEM_PROMPT, _text(hook.prompt, payload), chosen)
    except Exception as exc:  # a model failure is a non-blocking error, as a failing command
        return failed(hook.label, f"model call failed: {type(exc).__name__}: {exc}")
    if answer is None:
        return failed(hook.label, f"timed out after {hook.timeout:g}s")
    found = verdict(answer)
    if found is None:
        shown = " ".join(answer.split())[:200]
        return failed(
            hook.label, f'answered {shown!r}, not JSON {{"ok": true|false, "reason": ...}}'
        )
    return from_verdict(hook.event, *found)
