"""What a ``Read`` deny rule names stays hidden from a sandboxed command for all of its life, not
only what exists when it starts: a denied directory or name that appears later (created by the
command, or filled by another process while a background command runs) is not readable by it.
Real bubblewrap; the masks come from :func:`~agentscope_teams.tools.sandbox_mask.mask_for` as
the shell tool computes them."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from agentscope_teams.sandbox import BackgroundProcess, BubblewrapSandbox
from agentscope_teams.tools import parse_rule
from agentscope_teams.tools.sandbox_mask import mask_for

from .conftest import SMALL

POLL = "for i in $(seq 200); do cat {path} 2>/dev/null && break; sleep 0.02; done; echo end"


async def wait_for(path: Path) -> None:
    for _ in range(200):
        if path.exists():  # noqa: ASYNC240 (one stat, in a test)
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


async def output_when_ended(proc: BackgroundProcess) -> str:
    for _ in range(400):
        if not proc.running:
            return (await proc.read()).output
        await asyncio.sleep(0.05)
    raise AssertionError("the command did not end")


async def test_a_denied_directory_filled_by_another_process_stays_hidden(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    mask = mask_for([parse_rule("Read(secrets/**)", "deny")], workspace)
    command = "touch started; " + POLL.format(path="secrets/key")
    proc = await bwrap.start(command, workspace, limits=SMALL, mask=mask)
    await wait_for(workspace / "started")
    (workspace / "secrets").mkdir(exist_ok=True)
    (workspace / "secrets" / "key").write_text("TOPSECRET\n")  # another process, meanwhile
    output = await output_when_ended(proc)
    assert "TOPSECRET" not in output and "end" in output


async def test_a_command_cannot_create_a_denied_directory_or_name(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    rules = [parse_rule(r, "deny") for r in ("Read(secrets/**)", "Read(/.env)", "Read(cfg/.key)")]
    mask = mask_for(rules, workspace)
    result = await bwrap.run(
        "mkdir -p secrets && echo a > secrets/k; echo b > .env; mkdir -p cfg && echo c > cfg/.key;"
        " cat secrets/k .env cfg/.key; echo end",
        workspace, limits=SMALL, mask=mask,
    )  # fmt: skip
    assert "end" in result.output
    for line in ("a", "b", "c"):
        assert line not in result.output.split("\n"), result.output
    # the placeholders are gone once the command ends: the workspace is as it was
    assert os.listdir(workspace) == []


async def test_a_denied_name_another_process_creates_meanwhile_stays_hidden(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    mask = mask_for([parse_rule("Read(.env)", "deny")], workspace)
    command = "touch started; " + POLL.format(path=".env")
    proc = await bwrap.start(command, workspace, limits=SMALL, mask=mask)
    await wait_for(workspace / "started")
    (workspace / ".env").write_text("API_KEY=TOPSECRET\n")
    output = await output_when_ended(proc)
    assert "TOPSECRET" not in output and "end" in output
    assert (workspace / ".env").read_text() == "API_KEY=TOPSECRET\n"  # the writer's file is kept


async def test_a_denied_name_that_is_a_symlink_hides_its_target_too(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    """``secrets`` -> ``vault`` and ``.env`` -> ``conf/real``: ``read_file`` of ``secrets/key`` or
    ``.env`` is denied (the path as written matches), so the sandbox hides what they lead to."""
    (workspace / "vault").mkdir()
    (workspace / "vault" / "key").write_text("VAULTKEY\n")
    (workspace / "conf").mkdir()
    (workspace / "conf" / "real").write_text("ENVSECRET\n")
    (workspace / "secrets").symlink_to("vault")
    (workspace / ".env").symlink_to("conf/real")
    (workspace / "store").mkdir()
    (workspace / "store" / "key").write_text("STOREKEY\n")
    (workspace / "link").symlink_to("store")  # Read(link/key): the file reached through it
    rules = [parse_rule(r, "deny") for r in ("Read(secrets/**)", "Read(.env)", "Read(link/key)")]
    mask = mask_for(rules, workspace)
    result = await bwrap.run(
        "cat secrets/key; cat .env; cat link/key; echo end", workspace, limits=SMALL, mask=mask
    )
    assert "end" in result.output
    for secret in ("VAULTKEY", "ENVSECRET", "STOREKEY"):
        assert secret not in result.output, result.output


async def test_links_and_proc_paths_made_by_the_command_do_not_reach_a_hidden_file(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    """A symlink the command makes into a hidden path resolves inside the sandbox (to the mask),
    a hard link to a masked file crosses a mount (refused), and ``/proc/self/root`` is the
    sandbox's own root; neither ``mv`` nor ``rm`` moves a mask away."""
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "key").write_text("TOPSECRET\n")
    (workspace / "a.env").write_text("ENVSECRET\n")
    rules = [parse_rule(r, "deny") for r in ("Read(secrets/**)", "Read(*.env)")]
    result = await bwrap.run(
        "ln -s secrets/key s; ln -s a.env e; dd if=s status=none; dd if=e status=none;"
        " ln a.env hard; dd if=hard status=none;"
        ' dd if=/proc/self/root"$PWD"/a.env status=none; dd if=/proc/1/root"$PWD"/a.env status=none;'
        " mv secrets moved; rm -f a.env; dd if=moved/key status=none; dd if=a.env status=none;"
        " echo end",
        workspace, limits=SMALL, mask=mask_for(rules, workspace),
    )  # fmt: skip
    assert "end" in result.output
    assert "TOPSECRET" not in result.output and "ENVSECRET" not in result.output, result.output
    assert "Invalid cross-device link" in result.output
    assert (workspace / "secrets" / "key").read_text() == "TOPSECRET\n"


async def test_a_mask_another_process_replaces_stops_the_command(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    """An atomic save of ``.env`` by another process (write a new file, rename it over) would
    detach the mask inside the sandbox (Linux lazily unmounts a mount whose path is replaced from
    another mount namespace) and show the new file; the command is stopped instead, saying why."""
    (workspace / ".env").write_text("OLD\n")
    mask = mask_for([parse_rule("Read(.env)", "deny")], workspace)
    command = (
        "touch started; until [ -e go ]; do sleep 0.05; done; dd if=.env status=none; echo end"
    )
    proc = await bwrap.start(command, workspace, limits=SMALL, mask=mask)
    await wait_for(workspace / "started")
    (workspace / "new").write_text("API_KEY=TOPSECRET\n")
    os.replace(workspace / "new", workspace / ".env")
    await asyncio.sleep(0.3)
    (workspace / "go").touch()
    output = await output_when_ended(proc)
    assert "TOPSECRET" not in output and "end" not in output, output
    assert ".env" in output and "replaced" in output, output


async def test_a_placeholder_is_never_made_through_a_symlink(
    bwrap: BubblewrapSandbox, workspace: Path, tmp_path: Path
) -> None:
    """``Read(out/secret/**)`` with ``out`` -> a directory outside the workspace: nothing is
    made there (a placeholder is only made below a real directory of the workspace)."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "out").symlink_to(outside)
    mask = mask_for([parse_rule("Read(out/secret/**)", "deny")], workspace)
    result = await bwrap.run("echo ran", workspace, limits=SMALL, mask=mask)
    assert result.output == "ran\n"
    assert os.listdir(outside) == []


async def test_a_command_cannot_create_an_edit_denied_path_either(
    bwrap: BubblewrapSandbox, workspace: Path
) -> None:
    rules = [parse_rule(r, "deny") for r in ("Edit(/CHANGELOG.md)", "Edit(docs/**)")]
    mask = mask_for(rules, workspace)
    result = await bwrap.run(
        "echo a > CHANGELOG.md; mkdir -p docs && echo b > docs/new.md; echo c > other.md;"
        " cat CHANGELOG.md docs/new.md other.md; echo end",
        workspace, limits=SMALL, mask=mask,
    )  # fmt: skip
    lines = result.output.split("\n")
    assert "end" in lines and "c" in lines and "a" not in lines and "b" not in lines, lines
    assert sorted(os.listdir(workspace)) == ["other.md"]  # placeholders removed, the rest kept
