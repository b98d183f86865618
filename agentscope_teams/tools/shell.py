"""The shell tools: ``bash`` (Claude Code's ``Bash``), ``bash_output`` (``BashOutput``) and
``kill_shell`` (``KillShell``), running commands in a :class:`~agentscope_teams.sandbox.Sandbox`.

``bash`` runs a command in the call's workspace (``current_tool_env().workspace``, which already
separates sessions and users) and returns its exit code and combined output, capped at 30,000
characters (head and tail kept, the cut noted with its byte count). ``timeout`` is in milliseconds
(default 120000, at most 600000); at the timeout the command and everything it started are
killed. With ``run_in_background`` it returns an id at once: ``bash_output`` reads what the
command wrote since the last read, ``kill_shell`` stops it.

Background shells belong to the agent call that started them: only that call sees their ids,
and they are killed when it ends (a reply, a pause for confirmation, an error) or after the
sandbox's ``background_seconds``, whichever comes first. They live in this process: after a
restart an id is unknown and ``bash_output`` says so.

In a contained sandbox a command cannot read what the agent's ``Read`` deny rules cover, nor
change what its ``Edit`` deny rules cover, as in Claude Code's sandboxed Bash
(:mod:`.sandbox_mask`, with its limits), whatever program it runs (``python3 -c``, ``node -e``
included); the unsafe host sandbox cannot enforce this. In both, a command whose recognized file
commands (``cat .env``, ``echo x > docs/a.md``) read or change a denied path is denied before it
runs (:mod:`.file_commands`); what a program opens itself only the sandbox can hide.

Results are :class:`~.output.ToolOutput` data (command, exit code, timeout, truncation), so tool
result events carry them without parsing text.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Annotated, TypedDict

import anyio
from pydantic import Field

from ..errors import ToolError
from ..sandbox import BackgroundProcess, OutputChunk, PathMask, Sandbox, SandboxLimits
from ..sandbox.denials import DenialWatch, SandboxDenial, denial_in
from .base import Tool, ToolEnv
from .call_end import at_call_end
from .decorator import make_tool
from .output import ToolOutput
from .patterns import BoundedPattern

__all__ = ["SHELL_TOOLS", "ShellOutput", "ShellResult", "ShellStarted", "shell_tools"]

SHELL_TOOLS = ("bash", "bash_output", "kill_shell")
DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
MAX_OUTPUT_CHARS = 30_000
MAX_BACKGROUND = 8
"""Background shells one agent call may have running at once."""


class ShellResult(ToolOutput):
    """A foreground command's end: what ran, its exit code, output and whether it timed out."""

    command: str
    description: str | None = None
    exit_code: int
    output: str
    omitted_bytes: int = 0
    timed_out: bool = False
    timeout_ms: int
    sandbox: str
    #: What the sandbox refused the command, recorded once (:mod:`agentscope_teams.sandbox.denials`).
    sandbox_denial: SandboxDenial | None = None

    def render(self) -> str:
        text = self.output.rstrip("\n") or "(no output)"
        if self.sandbox_denial:
            text += f"\n[the sandbox refused {self.sandbox_denial.what}]"
        if self.timed_out:
            status = (
                f"[timed out after {self.timeout_ms} ms: the command and every process it started "
                "were killed; pass a larger timeout (at most 600000) or run_in_background]"
            )
        else:
            status = f"[exit code {self.exit_code}]"
        return f"{text}\n{status}"


class ShellStarted(ToolOutput):
    """A background command was started under ``shell_id``."""

    command: str
    description: str | None = None
    shell_id: str
    sandbox: str

    def render(self) -> str:
        return (
            f"started background shell {self.shell_id}. Read its output with "
            f'bash_output(bash_id="{self.shell_id}"); stop it with '
            f'kill_shell(shell_id="{self.shell_id}"). It is stopped when this reply ends.'
        )


class ShellOutput(ToolOutput):
    """New output of a background shell, and whether it still runs (or how it ended)."""

    shell_id: str
    command: str
    running: bool
    exit_code: int | None = None
    output: str
    omitted_bytes: int = 0
    filtered: bool = False
    killed: bool = False
    #: What the sandbox refused the command, on the read that first reports its end (recorded
    #: once: :mod:`agentscope_teams.sandbox.denials`).
    sandbox_denial: SandboxDenial | None = None

    def render(self) -> str:
        if self.killed:
            state = "killed"
        elif self.running:
            state = "running"
        else:
            state = f"exited with code {self.exit_code}"
        text = self.output.rstrip("\n") or "(no new output)"
        if self.sandbox_denial:
            text += f"\n[the sandbox refused {self.sandbox_denial.what}]"
        return f"[{self.shell_id}: {state}]\n{text}"


@dataclass
class _Shell:
    command: str
    process: BackgroundProcess
    watch: DenialWatch

    def output(
        self, shell_id: str, chunk: OutputChunk, *, shown: str, filtered: bool, killed: bool
    ) -> ShellOutput:
        """What ``chunk`` (read just now; ``shown``: the part of its output to show) says, with
        the sandbox's refusal on the read that first reports the end of a command it refused."""
        self.watch.seen(chunk.output)
        ended = None if chunk.running else chunk.exit_code
        return ShellOutput(
            shell_id=shell_id,
            command=self.command,
            running=chunk.running,
            exit_code=chunk.exit_code,
            output=shown,
            omitted_bytes=chunk.omitted_bytes,
            filtered=filtered,
            killed=killed,
            sandbox_denial=self.watch.ended(ended),
        )


@dataclass
class BackgroundShells:
    """The background shells of each running call, keyed by the call's ToolEnv."""

    calls: dict[int, dict[str, _Shell]] = field(default_factory=dict)
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def add(self, env: ToolEnv, command: str, process: BackgroundProcess, contained: bool) -> str:
        shells = self.calls.get(id(env))
        if shells is None:
            shells = self.calls[id(env)] = {}

            async def stop_all() -> None:
                for shell in self.calls.pop(id(env), {}).values():
                    await shell.process.kill()

            at_call_end(env, stop_all)
        shell_id = f"bash_{next(self.ids)}"
        shells[shell_id] = _Shell(command, process, DenialWatch(contained=contained))
        return shell_id

    def running(self, env: ToolEnv) -> int:
        return sum(s.process.running for s in self.calls.get(id(env), {}).values())

    def get(self, env: ToolEnv, shell_id: str) -> _Shell:
        found = self.calls.get(id(env), {}).get(shell_id)
        if found is None:
            raise ToolError(
                f"no background shell {shell_id!r} in this reply. Background shells belong to the "
                "reply that started them and are stopped when it ends (or when the service "
                "restarts); start the command again with bash(run_in_background=true)"
            )
        return found

    def forget(self, env: ToolEnv, shell_id: str) -> None:
        self.calls.get(id(env), {}).pop(shell_id, None)


async def _filtered(text: str, regex: BoundedPattern, *, where: str) -> str:
    """The lines of ``text`` matching the model's filter, searched in a worker thread under
    :class:`~.patterns.BoundedPattern`'s time bound (the event loop keeps running)."""
    lines = text.splitlines(True)
    if not lines:
        return ""
    try:
        return await anyio.to_thread.run_sync(
            lambda: "".join(line for line in lines if regex.search(line, where=where))
        )
    except ToolError as exc:
        raise ToolError(f"{exc}; the {len(lines)} line(s) of this read are not shown") from None


def bash_description(sandbox: Sandbox) -> str:
    """What the model is told about ``bash`` in ``sandbox`` (true to its containment)."""
    if not sandbox.contained:
        where = "Run a bash command on the host (not sandboxed) in your workspace directory. "
    else:
        network = "on" if getattr(sandbox, "network", "none") == "full" else "off"
        where = (
            "Run a bash command in a sandbox: the working directory is your workspace (the only "
            "place you can write), /tmp is private and emptied after the command, the network is "
            f"{network}. "
        )
    return where + (
        "No state (cd, variables) carries over to the next call. Returns the combined stdout and "
        "stderr (at most 30000 characters: the middle of longer output is cut) and the exit "
        "code. timeout is in milliseconds (default 120000, max 600000); at the timeout the "
        "command and all it started are killed. Use run_in_background for servers and long "
        "jobs, then bash_output and kill_shell. Prefer read_file, grep_files and glob_files for "
        "reading and searching files."
    )


class _Masked(TypedDict, total=False):
    mask: PathMask


async def _masked(sandbox: Sandbox, env: ToolEnv) -> _Masked:
    """``{"mask": ...}``: what the agent's ``Read`` and ``Edit`` deny rules hide from the command
    or keep read-only (``env.sandbox_mask``, a walk of the workspace, run in a worker thread),
    for a contained sandbox; ``{}`` when there is nothing to mask, or the sandbox cannot (the
    unsafe host one), so a sandbox written without masks still runs commands without rules."""
    if not sandbox.contained or env.sandbox_mask is None:
        return _Masked()
    mask = await anyio.to_thread.run_sync(env.sandbox_mask)
    return _Masked(mask=mask) if mask else _Masked()


def shell_tools(sandbox: Sandbox, *, limits: SandboxLimits | None = None) -> list[Tool]:
    """``bash``, ``bash_output`` and ``kill_shell`` over ``sandbox`` (module docstring).

    ``limits`` (default: the sandbox's own, else the defaults) apply to every command; a call's
    ``timeout`` replaces their timeout, and the output cap is 30,000 bytes at most.
    """
    base = limits or getattr(sandbox, "limits", None) or SandboxLimits()
    base = dataclasses.replace(base, max_output_bytes=min(base.max_output_bytes, MAX_OUTPUT_CHARS))
    shells = BackgroundShells()
    return [_bash_tool(sandbox, base, shells), *_background_tools(shells)]


def _bash_tool(sandbox: Sandbox, base: SandboxLimits, shells: BackgroundShells) -> Tool:
    """``bash``: a command in ``sandbox`` under ``base`` limits, or started in the background."""

    async def bash(
        command: str,
        # Claude Code's argument, in milliseconds, passed on to the sandbox as a limit
        timeout: Annotated[int | None, Field(ge=1, le=MAX_TIMEOUT_MS)] = None,  # noqa: ASYNC109
        description: str | None = None,
        run_in_background: bool = False,
        *,
        env: ToolEnv,
    ) -> ToolOutput:
        """Run a bash command in the sandbox.

        Args:
            command: The command to run (bash syntax; pipes, && and ; work).
            timeout: Milliseconds before the command is killed (default 120000, max 600000).
            description: What the command does, in 5-10 words (shown to the user).
            run_in_background: Start it and return an id at once; read it with bash_output.
        """
        if not command.strip():
            raise ToolError("command is empty; pass the shell command to run")
        if run_in_background:
            if shells.running(env) >= MAX_BACKGROUND:
                raise ToolError(
                    f"{MAX_BACKGROUND} background shells are already running in this reply; "
                    "stop one with kill_shell first"
                )
            process = await sandbox.start(
                command, env.workspace, limits=base, **await _masked(sandbox, env)
            )
            shell_id = shells.add(env, command, process, sandbox.contained)
            return ShellStarted(
                command=command, description=description, shell_id=shell_id, sandbox=sandbox.name
            )
        ms = timeout or DEFAULT_TIMEOUT_MS
        run_limits = dataclasses.replace(base, timeout=ms / 1000)
        result = await sandbox.run(
            command, env.workspace, limits=run_limits, **await _masked(sandbox, env)
        )
        return ShellResult(
            command=command,
            description=description,
            exit_code=result.exit_code,
            output=result.output,
            omitted_bytes=result.omitted_bytes,
            timed_out=result.timed_out,
            timeout_ms=ms,
            sandbox=sandbox.name,
            sandbox_denial=denial_in(
                result.output, contained=sandbox.contained, exit_code=result.exit_code
            ),
        )

    return make_tool(bash, description=bash_description(sandbox), requires_confirmation=True)


def _background_tools(shells: BackgroundShells) -> list[Tool]:
    """``bash_output`` and ``kill_shell`` over the background shells of ``shells``."""

    async def bash_output(bash_id: str, filter: str | None = None, *, env: ToolEnv) -> ShellOutput:
        """Read what a background shell wrote since the last read, and whether it still runs.

        Args:
            bash_id: The id bash returned for the background command (e.g. bash_1).
            filter: Only return lines matching this regular expression; the others are dropped.
        """
        shell = shells.get(env, bash_id)
        # compiled before the read: a filter that does not compile loses no output
        regex = None if filter is None else BoundedPattern(filter, what="filter regular expression")
        chunk = await shell.process.read()
        where = f"the output of {bash_id}"
        shown = chunk.output if regex is None else await _filtered(chunk.output, regex, where=where)
        return shell.output(bash_id, chunk, shown=shown, filtered=filter is not None, killed=False)

    async def kill_shell(shell_id: str, *, env: ToolEnv) -> ShellOutput:
        """Stop a background shell and everything it started.

        Args:
            shell_id: The id bash returned for the background command.
        """
        shell = shells.get(env, shell_id)
        was_running = shell.process.running
        await shell.process.kill()
        chunk = dataclasses.replace(await shell.process.read(), running=False)  # it was stopped
        shells.forget(env, shell_id)
        return shell.output(shell_id, chunk, shown=chunk.output, filtered=False, killed=was_running)

    return [make_tool(bash_output, read_only=True), make_tool(kill_shell)]
