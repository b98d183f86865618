"""A project whose team members run hooks: ``.claude/settings.json`` logs tool and task events,
the member spec ``coder`` has a ``hooks:`` of its own; and the member's scripted model (also
loaded by worker processes: ``--model python:tests.hooks.members:member_model``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentscope_teams.model.base import ModelRequest, ModelResponse
from agentscope_teams.model.scripted import ScriptedModel

from ..teams.scripts import call, step_results

CLAIMED = re.compile(r"Claimed task (t-\d+)")
LOG = "events.jsonl"
MARK = "spec-hook-ran"


#: What a hook answers for the event ``project(stop_on=...)`` names.
STOP = '{"continue": false, "stopReason": "tests are red"}'


def project(root: Path, stop_on: str | None = None) -> Path:
    """``root`` with the settings hooks and the ``coder`` spec; returns the agents folder. The
    hook of ``stop_on`` answers :data:`STOP` (``continue: false``) the first time it runs."""
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True, exist_ok=True)
    mark = root / MARK
    (agents / "coder.md").write_text(
        "---\nname: coder\ndescription: Writes files.\nworkspace:\n  mode: shared\n"
        "hooks:\n  PostToolUse:\n    - matcher: Write\n      hooks:\n"
        f"        - type: command\n          command: touch {mark}\n---\nYou write files.\n"
    )
    log = root / LOG
    # One append per event (hooks of the lead and its members run at once: a `cat` and a separate
    # newline could interleave two events on one line).
    append = f"line=$(cat); printf '%s\\n' \"$line\" >> {log}"
    events = ("PreToolUse", "TaskCompleted", "TeammateIdle")
    settings = {
        "hooks": {
            e: [
                {
                    "hooks": [
                        {
                            "type": "command",
                            "command": append + _answer(e, stop_on, root / "stopped-once"),
                        }
                    ]
                }
            ]
            for e in events
        }
    }
    (root / ".claude" / "settings.json").write_text(json.dumps(settings))
    return agents


def _answer(event: str, stop_on: str | None, once: Path) -> str:
    """The hook of ``stop_on`` answers :data:`STOP` the first time only (``once`` marks it)."""
    if event != stop_on:
        return ""
    return f"; if [ ! -e {once} ]; then touch {once}; echo '{STOP}'; fi"


def events(root: Path) -> list[dict[str, object]]:
    path = root / LOG
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def coder(request: ModelRequest) -> ModelResponse | str:
    """Claim a task, write out.txt, complete the task; then end the turn."""
    results = step_results(request)
    if not results:
        return call("claimTask")
    last = results[-1]
    if last.name == "claimTask" and CLAIMED.search(last.output):
        return call("write_file", path="out.txt", content="written")
    if last.name == "write_file":
        claimed = [
            found.group(1)
            for m in request.messages
            for r in m.tool_results()
            if r.name == "claimTask" and (found := CLAIMED.search(r.output))
        ]
        return call("completeTask", task_id=claimed[-1], result="out.txt written")
    return "done"


def member_model() -> ScriptedModel:
    return ScriptedModel(coder)
