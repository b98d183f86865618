"""A project's CLAUDE.md memory for library agents: ``HarnessAgent(project_memory=...)``, the
default for a Claude Code project's ``.claude/agents``, and how imports are read (hops, cycles,
code, the size bound, files outside an untrusted project)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, RuntimeContext, ScriptedModel
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.project_memory import MAX_CHARS, MAX_HOPS, ProjectMemory, imports
from agentscope_teams.store import InMemoryStore
from agentscope_teams.trust import ProjectTrust

CTX = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")


def _project(root: Path) -> Path:
    agents = root / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "helper.md").write_text("---\nname: helper\ndescription: Helps.\n---\nHelp out.\n")
    (root / ".claude" / "rules.md").write_text("RULES-TEXT\n")
    (root / ".claude" / "CLAUDE.md").write_text("PROJECT-TEXT, see @rules.md\n")
    return agents


def _spawning_model() -> ScriptedModel:
    return ScriptedModel(
        [ScriptedModel.tool_call("agent_spawn", {"agent": "helper", "task": "x"}), "ok", "done"]
    )


@pytest.mark.anyio
async def test_an_agent_on_a_claude_project_and_its_subagents_get_its_memory(
    tmp_path: Path,
) -> None:
    agents = _project(tmp_path)
    model = _spawning_model()
    lead = HarnessAgent(
        "lead", model, "Lead.", specs=agents, store=InMemoryStore(), workspace=tmp_path / "ws"
    )
    async with lead:
        await lead.call("go", CTX)
    lead_prompt, child_prompt = model.requests[0].system_prompt, model.requests[1].system_prompt
    assert "Help out." in child_prompt
    for prompt in (lead_prompt, child_prompt):
        assert "PROJECT-TEXT" in prompt and "RULES-TEXT" in prompt
    assert f"Contents of {tmp_path / '.claude' / 'rules.md'} (imported)" in lead_prompt


@pytest.mark.anyio
async def test_project_memory_false_text_or_a_file(tmp_path: Path) -> None:
    agents = _project(tmp_path)
    model = _spawning_model()
    off = HarnessAgent(
        "lead", model, "Lead.", specs=agents, store=InMemoryStore(), project_memory=False
    )
    async with off:
        await off.call("go", CTX)
    assert all("PROJECT-TEXT" not in r.system_prompt for r in model.requests)
    given = ScriptedModel(["done"])
    text = HarnessAgent(
        "lead", given, "Lead.", project_memory=ProjectMemory.from_text("GIVEN-TEXT")
    )
    async with text:
        await text.call("go", CTX)
    assert "GIVEN-TEXT" in given.requests[0].system_prompt
    one = HarnessAgent(
        "lead", ScriptedModel(["x"]), project_memory=tmp_path / ".claude" / "CLAUDE.md"
    )
    assert one.project_memory is not None
    assert "RULES-TEXT" in one.project_memory.text()
    with pytest.raises(ConfigurationError, match="nowhere': no such file or folder"):
        HarnessAgent("lead", ScriptedModel(["x"]), project_memory=tmp_path / "nowhere")


def test_imports_are_followed_five_hops_deep_and_no_further(tmp_path: Path) -> None:
    for n in range(MAX_HOPS + 2):
        (tmp_path / f"f{n}.md").write_text(f"TEXT-{n} @f{n + 1}.md\n")
    (tmp_path / "CLAUDE.md").write_text("@f0.md\n")
    memory = ProjectMemory.load(tmp_path, trust=ProjectTrust(trusted=False))
    names = [f.path.name for f in memory.files]
    assert names == ["CLAUDE.md", *(f"f{n}.md" for n in range(MAX_HOPS))]
    assert memory.notices[0].startswith(f"import @f{MAX_HOPS}.md in {tmp_path / 'f4.md'}")
    assert f"deeper than {MAX_HOPS} hops" in memory.notices[0]


def test_imports_skip_code_spans_fences_and_mail_addresses() -> None:
    text = (
        "See @a.md, `@span.md` and mail bob@example.com\n"
        "~~~~\n@fenced.md\n~~~\nstill @fenced2.md\n~~~~\n"
        "```python\n@decorator\n```\n- @b/c.md\n"
    )
    assert list(imports(text)) == ["a.md,", "b/c.md"]


def test_the_memory_is_bounded_and_the_cut_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("x" * (MAX_CHARS - 70) + "\n@more.md @last.md\n")
    (tmp_path / "more.md").write_text("y" * 100)
    (tmp_path / "last.md").write_text("LAST")
    memory = ProjectMemory.load(tmp_path)
    assert sum(len(f.text) for f in memory.files) == MAX_CHARS
    assert [f.path.name for f in memory.files] == ["CLAUDE.md", "more.md"]
    assert memory.notices == [
        f"memory file {tmp_path / 'more.md'} cut to 51 of its 100 characters: the project's "
        f"memory is bounded to {MAX_CHARS} characters; shorten it",
        f"memory file {tmp_path / 'last.md'} not read: the project's memory is at its bound "
        f"of {MAX_CHARS} characters; shorten the files read before it",
    ]


def test_an_import_out_of_an_untrusted_project_is_withheld(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("OUTSIDE-TEXT")
    project = tmp_path / "proj"
    project.mkdir()
    (project / "link.md").symlink_to(outside)  # a symlink is judged by where it leads
    (project / "CLAUDE.md").write_text("@link.md\n@../outside.md\n")
    trust = ProjectTrust(trusted=False)
    memory = ProjectMemory.load(project, trust=trust)
    assert "OUTSIDE-TEXT" not in memory.text()
    assert [w.name for w in trust.withheld] == ["@link.md", "@../outside.md"]
    assert "memory import '@link.md'" in trust.notice()
    # control: a trusted project's imports may leave it
    assert "OUTSIDE-TEXT" in ProjectMemory.load(project, trust=ProjectTrust(trusted=True)).text()


def test_a_memory_file_that_is_not_utf8_is_named_and_the_rest_still_read(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("PROJECT-TEXT\n")
    (tmp_path / "CLAUDE.local.md").write_bytes("caf\u00e9".encode("latin-1"))
    memory = ProjectMemory.load(tmp_path)
    assert "PROJECT-TEXT" in memory.text()
    assert memory.notices == [
        f"memory file {tmp_path / 'CLAUDE.local.md'} not read: it is not UTF-8 text; save it as "
        "UTF-8"
    ]


def test_a_memory_file_that_is_a_symlink_out_of_an_untrusted_project_is_not_read(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "home" / "id_key"
    secret.parent.mkdir()
    secret.write_text("SECRET-KEY")
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / "CLAUDE.local.md").symlink_to(secret)
    (project / ".claude" / "CLAUDE.md").symlink_to(secret)
    trust = ProjectTrust(trusted=False)
    memory = ProjectMemory.load(project, trust=trust)
    assert memory.files == [] and "SECRET-KEY" not in memory.text()
    assert [w.name for w in trust.withheld] == ["CLAUDE.md", "CLAUDE.local.md"]
    assert memory.notices[0].startswith(
        f"memory file {project / '.claude' / 'CLAUDE.md'} leads to {secret}, outside {project}"
    )
    # control: the same files of a trusted project are read (once: they are one file)
    trusted = ProjectMemory.load(project, trust=ProjectTrust(trusted=True))
    assert trusted.text().count("SECRET-KEY") == 1
