"""``asyncRewake: true`` (Claude Code: a background hook that exits 2 wakes the model, its stderr
a message the model reads, even after the turn ended). An agent call here is one request, so the
closest behaviour: the hook runs in the background as ``async`` does, and when it exits 2 its
stderr is kept in the session and given to the model at the start of the session's next call, as
a system reminder before the new prompt. Real hook scripts, real agent calls; the session is kept
in Redis, so a second agent object (another worker) delivers it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.hooks import parse_hooks
from agentscope_teams.model import ScriptedModel
from agentscope_teams.model.base import ModelRequest
from agentscope_teams.store import BaseStore

from .helpers import CTX, agent, script

WRITE = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})
#: Sleeps past the reply's last model call, then reports a problem with exit 2.
LINT = "cat >/dev/null\nsleep 0.5\necho 'lint: a.txt has tabs' >&2\nexit 2\n"


def _hooks(tmp_path: Path, **flags: Any) -> dict[str, Any]:
    entry = {"type": "command", "command": script(tmp_path, "lint.sh", LINT), **flags}
    return {"PostToolUse": [{"matcher": "Write", "hooks": [entry]}]}


def _texts(request: ModelRequest) -> list[str]:
    return [m.get_text_content() for m in request.messages]


async def test_an_exit_2_wakes_the_model_at_the_start_of_the_next_call(tmp_path: Path) -> None:
    model = ScriptedModel([WRITE, "done", "fixed"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path, asyncRewake=True)) as a:
        first = await a.call("write it", CTX)
        await a.call("anything else?", CTX)
    # the call neither waited for the hook before its answer nor read its stderr as a block
    assert first.get_text_content() == "done"
    assert all("a.txt has tabs" not in t for r in model.requests[:2] for t in _texts(r))
    texts = _texts(model.requests[2])
    [wake] = [i for i, t in enumerate(texts) if "lint: a.txt has tabs" in t]
    assert texts[wake].startswith("<system-reminder>") and "PostToolUse" in texts[wake]
    assert texts[wake + 1] == "anything else?"  # before the new prompt
    assert texts.count(texts[wake]) == 1


async def test_control_a_plain_async_hook_exiting_2_wakes_nothing(tmp_path: Path) -> None:
    """Claude Code's rule for ``async`` alone: its exit 2 decides nothing and says nothing."""
    model = ScriptedModel([WRITE, "done", "fine"])
    async with agent(tmp_path, model, hooks=_hooks(tmp_path, **{"async": True})) as a:
        await a.call("write it", CTX)
        await a.call("anything else?", CTX)
    assert all("a.txt has tabs" not in t for r in model.requests for t in _texts(r))


async def test_the_wake_is_kept_in_the_stored_session_for_whichever_agent_serves_it(
    tmp_path: Path, redis: BaseStore, ctx: RuntimeContext
) -> None:
    first = ScriptedModel([WRITE, "done"])
    async with agent(tmp_path, first, hooks=_hooks(tmp_path, asyncRewake=True), store=redis) as a:
        await a.call("write it", ctx)
    second = ScriptedModel(["fixed", "ok"])
    async with agent(tmp_path, second, store=redis) as b:  # no hooks: another worker
        await b.call("next", ctx)
        await b.call("and then?", ctx)
    assert any("a.txt has tabs" in t for t in _texts(second.requests[0]))
    assert sum("a.txt has tabs" in t for t in _texts(second.requests[1])) == 1  # given once


def test_async_rewake_must_be_a_boolean() -> None:
    data = {"PostToolUse": [{"hooks": [{"command": "true", "asyncRewake": "yes"}]}]}
    with pytest.raises(
        ConfigurationError, match=r"hooks\.PostToolUse\[0\]\.hooks\[0\]\.asyncRewake"
    ):
        parse_hooks(data, "settings.json")


def test_async_rewake_on_an_http_hook_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    data = {"PostToolUse": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:9/h",
                                        "asyncRewake": True}]}]}  # fmt: skip
    with caplog.at_level(logging.WARNING):
        [hook] = parse_hooks(data, "settings.json")["PostToolUse"]
    assert "hooks.PostToolUse[0].hooks[0].asyncRewake" in caplog.text
    assert not hook.background and not hook.rewake
