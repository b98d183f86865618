"""The agent's ``Read`` and ``Edit`` deny rules reach its sandboxed shell commands, as in Claude
Code's sandboxed Bash: a command cannot read what ``Read`` denies nor change what ``Edit`` denies
(real bubblewrap, through the agent's loop). The unsafe host sandbox cannot, and is the control.
Reads use ``dd``, writes a path in a variable: forms the engine does not recognize as file commands,
so the sandbox's mask is what refuses (``cat`` of a denied path, ``echo x > docs/a.md``, are
denied before they run: test_bash_file_commands.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.events import ToolResultEvent
from agentscope_teams.model import ScriptedModel
from agentscope_teams.sandbox import BubblewrapSandbox, PathMask, Sandbox, UnsafeHostSandbox
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools import PermissionEngine, ShellResult, output_of, parse_rule
from agentscope_teams.tools.sandbox_mask import mask_for

from .conftest import SMALL


async def run_commands(
    tmp_path: Path, sandbox: Sandbox, deny: list[str], files: dict[str, str], *commands: str
) -> list[ShellResult]:
    """Each command run by ``bash`` in one reply of an agent with the ``deny`` rules (bypass
    mode: nothing asks), in a session workspace holding ``files``."""
    rules = [parse_rule(text, "deny") for text in deny]
    script = [ScriptedModel.tool_call("bash", {"command": c}) for c in commands]
    lead = HarnessAgent(
        "lead",
        ScriptedModel([*script, "done"]),
        workspace=tmp_path / "root",
        store=InMemoryStore(),
        permissions=PermissionEngine(rules, mode="bypass"),
        sandbox=sandbox,
    )
    ctx = RuntimeContext(session_id="s1", user_id="alice")
    workspace = lead.workspace_for(ctx)
    for name, text in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_text(text)
    found = []
    async with lead:
        async for event in lead.stream("go", ctx):
            if isinstance(event, ToolResultEvent):
                result = output_of(event.result, ShellResult)
                assert result is not None, event.result.output
                found.append(result)
    assert len(found) == len(commands)
    return found


SECRETS = {"secrets/key": "TOPSECRET\n", "other.txt": "visible\n"}


async def test_a_read_deny_rule_hides_a_directory_from_bash(
    bwrap: BubblewrapSandbox, unsafe: UnsafeHostSandbox, tmp_path: Path
) -> None:
    cat, ls, other = await run_commands(
        tmp_path, bwrap, ["Read(secrets/**)"], SECRETS,
        "dd if=secrets/key status=none", "ls -A secrets", "cat other.txt",
    )  # fmt: skip
    assert cat.exit_code != 0 and "TOPSECRET" not in cat.output
    assert ls.exit_code == 0 and ls.output == ""
    assert other.exit_code == 0 and other.output == "visible\n"
    # control: the unsafe host sandbox cannot apply the rule (documented)
    [control] = await run_commands(
        tmp_path / "unsafe", unsafe, ["Read(secrets/**)"], SECRETS, "dd if=secrets/key status=none"
    )
    assert control.output == "TOPSECRET\n"


async def test_a_read_deny_glob_hides_a_nested_file(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    files = {"config/.env": "API_KEY=abc\n", "config/app.toml": "x = 1\n"}
    env, grep, app = await run_commands(
        tmp_path, bwrap, ["Read(*.env)"], files,
        "dd if=config/.env status=none", "grep -r API_KEY .", "cat config/app.toml",
    )  # fmt: skip
    assert env.exit_code != 0 and "API_KEY" not in env.output
    assert "abc" not in grep.output
    assert app.exit_code == 0 and app.output == "x = 1\n"


async def test_an_edit_deny_rule_makes_paths_read_only_in_bash(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    files = {"docs/a.md": "original\n", "src/b.py": "pass\n"}
    write, new, read, other = await run_commands(
        tmp_path, bwrap, ["Edit(docs/**)"], files,
        "f=docs/a.md; echo x > $f", "f=docs/new.md; echo y > $f", "cat docs/a.md",
        "echo z > src/b.py && cat src/b.py",
    )  # fmt: skip
    assert write.exit_code != 0 and new.exit_code != 0
    assert read.exit_code == 0 and read.output == "original\n"
    assert other.exit_code == 0 and other.output == "z\n"
    assert write.sandbox_denial is not None  # the kernel's refusal, recorded as one


async def test_without_read_or_edit_deny_rules_the_command_line_is_unchanged(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key").write_text("k")
    rules = [
        parse_rule("Read(secrets/**)", "allow"),
        parse_rule("Bash(rm:*)", "deny"),
        parse_rule("WebFetch(domain:example.com)", "deny"),
    ]
    mask = mask_for(rules, tmp_path)
    assert mask == PathMask() and not mask
    assert bwrap.argv("true", tmp_path, SMALL, mask) == bwrap.argv("true", tmp_path, SMALL)
    masked = mask_for([parse_rule("Read(secrets/**)", "deny")], tmp_path)
    assert masked == PathMask(hidden=(str(tmp_path / "secrets"),))


async def test_a_background_command_cannot_read_it_either(
    bwrap: BubblewrapSandbox, tmp_path: Path
) -> None:
    background = "dd if=secrets/key status=none > out.txt 2>&1; touch done"
    wait = "until [ -e done ]; do sleep 0.05; done; cat out.txt"
    rules = [parse_rule("Read(secrets/**)", "deny")]
    lead = HarnessAgent(
        "lead",
        ScriptedModel(
            [
                ScriptedModel.tool_call("bash", {"command": background, "run_in_background": True}),
                ScriptedModel.tool_call("bash", {"command": wait, "timeout": 20000}),
                "done",
            ]
        ),
        workspace=tmp_path / "root",
        store=InMemoryStore(),
        permissions=PermissionEngine(rules, mode="bypass"),
        sandbox=bwrap,
    )
    ctx = RuntimeContext(session_id="s1")
    (lead.workspace_for(ctx) / "secrets").mkdir(parents=True)
    (lead.workspace_for(ctx) / "secrets" / "key").write_text("TOPSECRET\n")
    outputs = []
    async with lead:
        async for event in lead.stream("go", ctx):
            if isinstance(event, ToolResultEvent):
                outputs.append(event.result.output)
    assert "No such file or directory" in outputs[-1] and "TOPSECRET" not in outputs[-1]


def test_absolute_home_and_directory_forms_mask_the_same_paths(tmp_path: Path) -> None:
    (tmp_path / "secrets" / "deep").mkdir(parents=True)
    (tmp_path / "secrets" / "deep" / "k").write_text("k")
    (tmp_path / "a.env").write_text("e")
    (tmp_path / "keep.txt").write_text("t")
    hidden = (str(tmp_path / "secrets"),)
    for text in (
        "Read(secrets)",
        "Read(secrets/)",
        "Read(./secrets/**)",
        f"Read(/{tmp_path}/secrets/**)",
    ):
        assert mask_for([parse_rule(text, "deny")], tmp_path) == PathMask(hidden=hidden), text
    both = mask_for([parse_rule("Read(*.env)", "deny"), parse_rule("Edit(*)", "deny")], tmp_path)
    assert both == PathMask(hidden=(str(tmp_path / "a.env"),), read_only=(str(tmp_path),))


INTERPRETERS = {
    "python3": "python3 -c \"print(open('secrets/key').read())\"",
    "perl": 'perl -e \'open(my $f, "<", "secrets/key") or die "no: $!"; print <$f>\'',
    "node": "node -e \"console.log(require('fs').readFileSync('secrets/key', 'utf8'))\"",
    "bash": "bash -c 'f=secrets/key; echo \"$(<$f)\"'",
}


@pytest.mark.parametrize("program", sorted(INTERPRETERS))
async def test_an_interpreter_cannot_read_what_a_read_rule_hides(
    bwrap: BubblewrapSandbox, tmp_path: Path, program: str
) -> None:
    """Read deny rules cannot see into a script's code, but the sandbox's mask is below them:
    the interpreter, started by a command no rule objects to, finds nothing to read."""
    if shutil.which(program) is None:
        pytest.skip(f"{program} is not installed here")
    files = {"secrets/key": "TOPSECRET\n", "version.txt": "1\n"}
    denied, control = await run_commands(
        tmp_path, bwrap, ["Read(secrets/**)"], files,
        INTERPRETERS[program], INTERPRETERS[program].replace("secrets/key", "version.txt"),
    )  # fmt: skip
    assert "TOPSECRET" not in denied.output, denied.output
    assert control.exit_code == 0 and "1" in control.output, control.output  # it runs at all
