"""``scripted:FILE``: model turns read from a JSON or YAML file, so an agent runs without a key.

``model_from_string("scripted:FILE")``, ``run --model scripted:FILE`` and ``worker --model
scripted:FILE`` all build this model. The file maps an agent to its turns, replayed in order::

    lead:                        # the agent that was started (run's lead, or your HarnessAgent)
      - text: "I'll ask the explorer."         # optional text before the calls
        tool_calls:
          - {name: agent_spawn, input: {agent: explorer, task: "List the Python files"}}
      - "The final answer."                    # a string is a text-only turn
    explorer:                    # any other key is a spec name: its subagents and team members
      - tool_calls: [{name: glob_files, input: {pattern: "**/*.py"}}]
      - "Three files."

A bare list instead of a mapping is the lead's turns. In a tool input, the text ``{task_id}`` becomes
the id of the first task the agent was last woken for (a team member's wake-up message names them),
so a member can ``claimTask``/``completeTask`` a task whose id is made at run time.

Which agent asks is told by the system prompt: a request whose system prompt contains a known spec's
prompt is that spec's (the longest match wins; :meth:`ScriptFileModel.know_specs` tells the prompts,
as ``run`` and ``worker`` do from ``--specs``); any other request is the lead's, or, when the model
was given ``lead_prompt=``, only one containing it (others are an error naming the known specs).
Agents sharing a spec share its turns, in the order they ask; turns are counted per process. An agent
that asks past its last turn gets a :class:`~agentscope_teams.errors.ModelError` naming the file and
the agent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..errors import ModelConfigurationError, ModelError, first_problem
from ..message import TEAM_WAKE_KEY, Msg
from ..text_files import read_text_file
from .base import ModelRequest, ModelResponse
from .scripted import ScriptedModel

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
    """The turns of each agent in ``path``; a :class:`ModelConfigurationError` naming the file and
    the field for a bad one."""
    raw = read_text_file(
        path,
        "the model script",
        error=ModelConfigurationError,
        hint="check the path after 'scripted:'",
    )
    try:
        data = json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
    except json.JSONDecodeError as exc:
        raise ModelConfigurationError(
            f"model script {path}:{exc.lineno}: invalid JSON: {exc.msg}"
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        raise ModelConfigurationError(
            f"model script {path}{line}: invalid YAML: {exc.problem or exc.context}"
        ) from None
    except yaml.YAMLError as exc:
        raise ModelConfigurationError(f"model script {path}: invalid YAML: {exc}") from None
    if isinstance(data, list):
        data = {LEAD: data}
    try:
        agents = _SCRIPT.validate_python(data)
    except ValidationError as exc:
        raise ModelConfigurationError(
            f"model script {path}: {first_problem(exc, 'the file')}; see "
            "docs/reference/models.md for the format"
        ) from None
    return {
        name: [t if isinstance(t, _Turn) else _Turn(text=t) for t in turns]
        for name, turns in agents.items()
    }


class ScriptRouter:
    """Answers each request with the next turn of the agent that asks (see the module docs)."""

    def __init__(
        self, path: Path, turns: dict[str, list[_Turn]], lead_prompt: str | None = None
    ) -> None:
        self.path, self.turns, self.lead_prompt = path, turns, lead_prompt
        self.prompts: dict[str, str] = {}  # spec name -> its system prompt
        self.used: dict[str, int] = dict.fromkeys(turns, 0)

    def know_specs(self, prompts: Mapping[str, str]) -> None:
        self.prompts = {name: p.strip() for name, p in prompts.items() if p.strip()}

    def agent_of(self, request: ModelRequest) -> str:
        found = [n for n, p in self.prompts.items() if p in request.system_prompt]
        if found:
            return max(found, key=lambda n: len(self.prompts[n]))
        if self.lead_prompt is None or self.lead_prompt in request.system_prompt:
            return LEAD
        known = ", ".join(sorted(self.prompts)) or "none"
        raise ModelError(
            f"model script {self.path}: a request's system prompt is neither the lead's nor "
            f"that of a spec with a prompt in --specs (specs with one: {known}); give the spec "
            "that asked a system prompt"
        )

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


class ScriptFileModel(ScriptedModel):
    """A :class:`ScriptedModel` answering from a script file; see the module docs."""

    def __init__(self, path: Path, *, lead_prompt: str | None = None) -> None:
        self.router = ScriptRouter(path, load_script(path), lead_prompt)
        super().__init__(self.router, name=f"scripted:{path.name}")

    def know_specs(self, prompts: Mapping[str, str]) -> None:
        """Route requests whose system prompt contains one of ``prompts`` (spec name -> its
        prompt) to that spec's turns."""
        self.router.know_specs(prompts)


def build(
    file: str, *, lead_prompt: str | None = None, specs: Mapping[str, str] | None = None
) -> ScriptFileModel:
    """The model of ``"scripted:FILE"`` (``file`` is the part after ``scripted:``): ``lead_prompt``
    and ``specs`` (spec name -> system prompt) say which agent asks, as in the module docs."""
    model = ScriptFileModel(Path(file).expanduser(), lead_prompt=lead_prompt)
    if specs:
        model.know_specs(specs)
    return model


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
    """The first task id of the last wake-up message (see :data:`~..message.TEAM_WAKE_KEY`)."""
    for msg in reversed(messages):
        wake = msg.metadata.get(TEAM_WAKE_KEY)
        if isinstance(wake, dict):
            ids = [*wake.get("own", []), *wake.get("free", [])]
            if ids:
                return str(ids[0])
    return None
