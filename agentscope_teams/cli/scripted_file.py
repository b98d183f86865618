"""``--model scripted:FILE``: model turns read from a JSON or YAML file, so ``run`` works without a key.

The file maps an agent to its turns, replayed in order::

    lead:                        # the agent ``run`` starts
      - text: "I'll ask the explorer."         # optional text before the calls
        tool_calls:
          - {name: agent_spawn, input: {agent: explorer, task: "List the Python files"}}
      - "The final answer."                    # a string is a text-only turn
    explorer:                    # any other key is a spec name: its subagents and team members
      - tool_calls: [{name: glob_files, input: {pattern: "**/*.py"}}]
      - "Three files."

A bare list instead of a mapping is the lead's turns. In a tool input, the text ``{task_id}`` becomes
the id of the first task the agent was last woken for (a team member's wake-up message names them),
so a member can ``claimTask``/``completeTask`` a task whose id is made at run time. Which agent asks
is told by the system prompt: the lead's, or the one containing a spec's prompt. Agents sharing a
spec share its turns, in the order they ask. An agent that asks past its last turn gets a
:class:`~agentscope_teams.errors.ModelError` naming the file and the agent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..errors import CommandError, ModelError, first_problem
from ..message import Msg
from ..model import ModelRequest, ModelResponse, ScriptedModel
from ..teams.member.work import WAKE

PREFIX = "scripted:"
LEAD = "lead"
TASK_ID = "{task_id}"


class _Call(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1)
    input: dict[str, Any] = Field(default_factory=dict)


class _Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = ""
    tool_calls: list[_Call] = Field(default_factory=list)


_SCRIPT = TypeAdapter(dict[str, list[_Turn | str]])  # agent name -> its turns


def load_script(path: Path) -> dict[str, list[_Turn]]:
    """The turns of each agent in ``path``; a clear :class:`CommandError` for a bad file."""
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CommandError(f"cannot read the model script {path}: {exc.strerror}") from None
    try:
        data = json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
    except (ValueError, yaml.YAMLError) as exc:
        raise CommandError(f"model script {path} is not valid JSON/YAML: {exc}") from None
    if isinstance(data, list):
        data = {LEAD: data}
    try:
        agents = _SCRIPT.validate_python(data)
    except ValidationError as exc:
        raise CommandError(
            f"model script {path}: {first_problem(exc, 'the file')}; see `agentscope-teams run --help` "
            "for the format"
        ) from None
    return {
        name: [t if isinstance(t, _Turn) else _Turn(text=t) for t in turns]
        for name, turns in agents.items()
    }


class ScriptRouter:
    """Answers each request with the next turn of the agent that asks (see the module docs)."""

    def __init__(self, path: Path, turns: dict[str, list[_Turn]], lead_prompt: str) -> None:
        self.path, self.turns, self.lead_prompt = path, turns, lead_prompt
        self.prompts: dict[str, str] = {}  # spec name -> its system prompt
        self.used: dict[str, int] = dict.fromkeys(turns, 0)

    def know_specs(self, prompts: Mapping[str, str]) -> None:
        self.prompts = {name: p.strip() for name, p in prompts.items() if p.strip()}

    def agent_of(self, request: ModelRequest) -> str:
        if self.lead_prompt in request.system_prompt:
            return LEAD
        found = [n for n, p in self.prompts.items() if p in request.system_prompt]
        if not found:
            known = ", ".join(sorted(self.prompts)) or "none"
            raise ModelError(
                f"model script {self.path}: a request's system prompt is neither the lead's nor "
                f"that of a spec with a prompt in --specs (specs with one: {known}); give the spec "
                "that asked a system prompt"
            )
        return max(found, key=lambda n: len(self.prompts[n]))

    def __call__(self, request: ModelRequest) -> ModelResponse:
        agent = self.agent_of(request)
        turns, n = self.turns.get(agent, []), self.used.get(agent, 0)
        if n >= len(turns):
            raise ModelError(
                f"model script {self.path} has {len(turns)} turn(s) for {agent!r} and it asked "
                f"for one more; add turns under '{agent}:'"
            )
        self.used[agent] = n + 1
        return _response(turns[n], _task_id(request.messages))


def scripted_model(text: str, lead_prompt: str) -> tuple[ScriptedModel, ScriptRouter]:
    """The model of ``--model scripted:FILE`` and its router (give it the specs' prompts)."""
    path = Path(text[len(PREFIX) :]).expanduser()
    router = ScriptRouter(path, load_script(path), lead_prompt)
    return ScriptedModel(router, name=f"scripted:{path.name}"), router


def _response(turn: _Turn, task_id: str | None) -> ModelResponse:
    if not turn.tool_calls:
        return ScriptedModel.text(turn.text)
    calls = [(c.name, _fill(c.input, task_id)) for c in turn.tool_calls]
    return ScriptedModel.tool_calls(calls, text=turn.text)


def _fill(value: Any, task_id: str | None) -> Any:
    if isinstance(value, str) and task_id is not None:
        return value.replace(TASK_ID, task_id)
    if isinstance(value, dict):
        return {k: _fill(v, task_id) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, task_id) for v in value]
    return value


def _task_id(messages: list[Msg]) -> str | None:
    """The first task id of the last wake-up message (see ``teams.work``)."""
    for msg in reversed(messages):
        wake = msg.metadata.get(WAKE)
        if isinstance(wake, dict):
            ids = [*wake.get("own", []), *wake.get("free", [])]
            if ids:
                return str(ids[0])
    return None
