"""Claude Code's settings that restrict hooks, layered managed > project: ``allowedHttpHookUrls``
(an http hook whose URL no pattern matches is not requested: a non-blocking error naming the
settings file, the hook and the URL; on a guard event it denies), ``httpHookAllowedEnvVars`` (a
hook's ``allowedEnvVars`` cut down to it), and the managed-only ``allowManagedHooksOnly`` /
``disableAllHooks``. Hooks are assembled as an agent assembles them (``HarnessAgent`` with the
project's specs), against a real HTTP server on a loopback port."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.hooks import MANAGED_SETTINGS_ENV, Hooks, hooks_of_spec
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store import InMemoryStore
from agentscope_teams.subagents.spec import load_specs
from agentscope_teams.trust import ProjectTrust

from .helpers import CTX, script, tool_results
from .http_server import Reply, Server
from .test_http_hooks import http_hooks

POST = {
    "session_id": "s1",
    "tool_name": "Bash",
    "tool_input": {"command": "ls"},
    "tool_response": "",
}


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data))


def project(tmp_path: Path, settings: dict[str, Any], local: dict[str, Any] | None = None) -> Path:
    """A project whose ``.claude/settings.json`` is ``settings``; returns its specs folder."""
    agents = tmp_path / "proj" / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents.parent / "settings.json").write_text(json.dumps(settings))
    if local is not None:
        (agents.parent / "settings.local.json").write_text(json.dumps(local))
    return agents


@pytest.fixture
def managed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The managed (admin) settings file this test writes; absent until it does."""
    path = tmp_path / "etc" / "managed-settings.json"
    path.parent.mkdir()
    monkeypatch.setenv(MANAGED_SETTINGS_ENV, str(path))
    return path


async def assembled(tmp_path: Path, specs: Path | None, **kw: Any) -> Hooks:
    """The hooks an agent over ``specs`` (a trusted project) runs."""
    if specs is not None:
        kw.update(specs=specs, trust_project=True)
    lead = HarnessAgent(
        "lead", ScriptedModel(["ok"]), workspace=tmp_path / "ws", store=InMemoryStore(), **kw
    )
    await lead.aclose()
    return lead.hooks


@pytest.mark.usefixtures("managed")
async def test_a_url_no_pattern_allows_is_not_requested_and_the_error_names_it(
    tmp_path: Path, server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    hooks_conf = {
        "PostToolUse": [
            {"hooks": [{"type": "http", "url": server.url("/ok/audit")}]},
            {"hooks": [{"type": "http", "url": server.url("/elsewhere")}]},
        ]
    }
    allowed = f"http://127.0.0.1:{server.port}/ok/*"
    specs = project(tmp_path, {"hooks": hooks_conf, "allowedHttpHookUrls": [allowed]})
    hooks = await assembled(tmp_path, specs)
    with caplog.at_level(logging.WARNING):
        out = await hooks.fire("PostToolUse", dict(POST))
    assert [s["path"] for s in server.seen] == ["/ok/audit"]
    (notice,) = out.notices
    settings = specs.parent / "settings.json"
    assert str(settings) in notice and "allowedHttpHookUrls" in notice
    assert f"PostToolUse http {server.url('/elsewhere')}" in notice
    assert notice in caplog.text


@pytest.mark.usefixtures("managed")
async def test_an_empty_list_blocks_every_http_hook_and_no_key_blocks_none(
    tmp_path: Path, server: Server
) -> None:
    conf = http_hooks("PostToolUse", server.url("/a"))
    empty = await assembled(
        tmp_path / "1", project(tmp_path / "1", {"hooks": conf, "allowedHttpHookUrls": []})
    )
    out = await empty.fire("PostToolUse", dict(POST))
    assert server.seen == [] and "an empty list" in out.notices[0]
    absent = await assembled(tmp_path / "2", project(tmp_path / "2", {"hooks": conf}))
    assert not (await absent.fire("PostToolUse", dict(POST))).notices
    assert [s["path"] for s in server.seen] == ["/a"]


@pytest.mark.usefixtures("managed")
async def test_a_guard_whose_url_is_not_allowed_denies_the_call_end_to_end(
    tmp_path: Path, server: Server
) -> None:
    """Fail closed: a PreToolUse hook that may not be asked cannot approve anything."""
    server.replies["/guard"] = Reply(body=json.dumps({}))  # would allow: never asked
    conf = http_hooks("PreToolUse", server.url("/guard"), "Write")
    specs = project(
        tmp_path, {"hooks": conf, "allowedHttpHookUrls": ["https://hooks.example.com/*"]}
    )
    write = ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": "x"})
    model = ScriptedModel([write, "done"])
    lead = HarnessAgent(
        "lead", model, workspace=tmp_path / "ws", workspace_scope="shared", specs=specs,
        trust_project=True, store=InMemoryStore(),
    )  # fmt: skip
    async with lead:
        await lead.call("write it", CTX)
    assert server.seen == [] and not (tmp_path / "ws" / "a.txt").exists()
    (result,) = tool_results(model.requests[1])
    assert "denied" in result and server.url("/guard") in result
    assert str(specs.parent / "settings.json") in result


@pytest.mark.usefixtures("managed")
async def test_http_hook_allowed_env_vars_cuts_the_hooks_own_list(
    tmp_path: Path, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOOK_TOKEN", "t0ken")
    monkeypatch.setenv("TEAM_ID", "blue")
    headers = {"Authorization": "Bearer $HOOK_TOKEN", "X-Team": "${TEAM_ID}"}
    conf = http_hooks(
        "PostToolUse", server.url("/h"), headers=headers, allowedEnvVars=["HOOK_TOKEN", "TEAM_ID"]
    )
    specs = project(tmp_path, {"hooks": conf}, local={"httpHookAllowedEnvVars": ["TEAM_ID"]})
    await (await assembled(tmp_path, specs)).fire("PostToolUse", dict(POST))
    sent = server.seen[0]["headers"]
    assert sent["X-Team"] == "blue"  # in both lists
    assert sent["Authorization"] == "Bearer"  # the hook's own list allows it, the settings' not


async def test_a_managed_allowlist_is_not_widened_by_the_project(
    tmp_path: Path, server: Server, managed: Path
) -> None:
    write_json(managed, {"allowedHttpHookUrls": ["https://hooks.example.com/*"]})
    conf = http_hooks("PostToolUse", server.url("/mine"))
    mine = f"http://127.0.0.1:{server.port}/*"
    specs = project(tmp_path, {"hooks": conf, "allowedHttpHookUrls": [mine]})
    out = await (await assembled(tmp_path, specs)).fire("PostToolUse", dict(POST))
    assert server.seen == []
    assert str(managed) in out.notices[0] and server.url("/mine") in out.notices[0]


async def test_managed_hooks_run_and_allow_managed_hooks_only_drops_the_others(
    tmp_path: Path, managed: Path
) -> None:
    log = tmp_path / "ran.txt"
    cmd = {
        n: script(tmp_path, f"{n}.sh", f"cat > /dev/null; echo {n} >> {log}")
        for n in ("admin", "proj", "spec", "code")
    }

    def conf(name: str) -> dict[str, Any]:
        return {"PostToolUse": [{"hooks": [{"type": "command", "command": cmd[name]}]}]}

    specs = project(tmp_path, {"hooks": conf("proj")})
    (specs / "helper.md").write_text(
        "---\nname: helper\ndescription: helps\nhooks:\n"
        f"  PostToolUse:\n    - hooks:\n        - type: command\n          command: {cmd['spec']}\n---\nhelp\n"
    )
    write_json(managed, {"hooks": conf("admin")})
    both = await assembled(tmp_path / "a", specs, hooks=conf("code"))
    await both.fire("PostToolUse", dict(POST))
    assert sorted(log.read_text().split()) == ["admin", "code", "proj"]

    log.unlink()
    write_json(managed, {"hooks": conf("admin"), "allowManagedHooksOnly": True})
    hooks = await assembled(tmp_path / "b", specs, hooks=conf("code"))
    await hooks.fire("PostToolUse", dict(POST))
    assert sorted(log.read_text().split()) == ["admin", "code"]  # code is the operator's
    spec = load_specs(specs).specs["helper"]
    assert hooks_of_spec(hooks, spec, ProjectTrust(trusted=True)).by_event == hooks.by_event


async def test_managed_disable_all_hooks_turns_off_every_file_hook_a_projects_only_its_own(
    tmp_path: Path, managed: Path
) -> None:
    log = tmp_path / "ran.txt"
    admin = script(tmp_path, "admin.sh", f"cat > /dev/null; echo admin >> {log}")
    proj = script(tmp_path, "proj.sh", f"cat > /dev/null; echo proj >> {log}")
    entry = lambda c: {"PostToolUse": [{"hooks": [{"type": "command", "command": c}]}]}  # noqa: E731
    write_json(managed, {"hooks": entry(admin), "disableAllHooks": True})
    specs = project(tmp_path, {"hooks": entry(proj)})
    assert not await assembled(tmp_path / "a", specs)  # nothing left to run
    write_json(managed, {"hooks": entry(admin)})
    specs.parent.joinpath("settings.local.json").write_text(json.dumps({"disableAllHooks": True}))
    await (await assembled(tmp_path / "b", specs)).fire("PostToolUse", dict(POST))
    assert log.read_text().split() == ["admin"]  # a project cannot turn the admin's hooks off


@pytest.mark.usefixtures("managed")
async def test_an_untrusted_projects_allowlist_restricts_nothing(
    tmp_path: Path, server: Server
) -> None:
    """A cloned repository's settings do not run, and do not restrict the operator's hooks
    either (nor deny its guards)."""
    specs = project(tmp_path, {"allowedHttpHookUrls": []})
    lead = HarnessAgent(
        "lead", ScriptedModel(["ok"]), workspace=tmp_path / "ws", specs=specs,
        hooks=http_hooks("PostToolUse", server.url("/operator")), store=InMemoryStore(),
    )  # fmt: skip
    await lead.aclose()
    assert not (await lead.hooks.fire("PostToolUse", dict(POST))).notices
    assert [s["path"] for s in server.seen] == ["/operator"]
