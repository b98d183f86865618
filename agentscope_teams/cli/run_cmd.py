"""``agentscope-teams run [--specs DIR] "prompt"``: one turn of a lead agent with subagents.

The lead gets the spec directory's subagents (``agent_spawn`` and friends) and the team tools;
without ``--specs`` the directory is ``./specs``, else ``./.claude/agents``; with neither it works
alone. Its workspace is the current directory. The model
comes from ``--model`` (any string :func:`~agentscope_teams.model.model_from_string` reads:
``scripted:FILE`` replays model turns from a file, see :mod:`agentscope_teams.model.script_file`;
``python:module:attr`` loads one from code) or from the API key found in the environment. The
output is live (:mod:`.run_view`): streamed tokens, tool calls and results, the team's board and
messages, then a summary; Ctrl-C ends the open line and prints the ``--session`` to continue with.
When a PreToolUse hook defers a tool call (``permissionDecision: "defer"``) the run stops with it
pending and prints the command that resumes it: ``--session`` without a PROMPT runs its hook again.
``--mcp-config`` gives the lead (and the specs that select them) an operator's MCP servers. The
project's own MCP servers (its ``.mcp.json``, ``mcpServers`` in its spec files) start only if the
project is trusted (``--trust-project``, :mod:`.trust_cmd`); otherwise a note on stderr names them
and says how to enable them. ``--sandbox`` chooses where the ``bash`` tool runs commands
(:mod:`.sandbox_option`). The project's ``CLAUDE.md`` memory (that of the ``--specs`` project
when it is a ``.claude/agents`` folder, else of the current directory; the folders above it; the
user's ``~/.claude/CLAUDE.md``; see :mod:`agentscope_teams.project_memory`) goes into the lead's
and its subagents' system prompts; what could not be read is a note on stderr.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
import uuid
from contextlib import aclosing
from functools import partial
from pathlib import Path

import anyio

from ..compose import HarnessAgent
from ..context import RuntimeContext
from ..events import ToolResultEvent
from ..model import ChatModel
from ..model.factory import CLAUDE_ALIASES, model_from_string
from ..model.script_file import PREFIX as SCRIPTED
from ..subagents import load_specs
from ..teams import LocalTeamClient
from ..tracing import UsageMeter, metering
from .common import (
    CommandError,
    SubParsers,
    add_command,
    add_identity_options,
    add_json_option,
    identity_flags,
    path_argument,
    print_json_line,
    require_mcp,
    spec_directory,
    text_argument,
    undecodable_at,
    with_store,
)
from .exits import EXIT_INTERRUPTED, EXIT_USAGE
from .review_cmd import KEY_DEFAULTS
from .review_run import Watcher
from .run_view import RunSummary, RunView
from .sandbox_option import add_sandbox_option, sandbox_option
from .trust_cmd import add_trust_option, project_memory, project_trust, untrusted_note
from .usage_option import add_usage_options, usage_options
from .usage_view import usage_json, usage_lines

#: Environment key -> the model ``run`` uses when ``--model`` is not given (first match wins);
#: with an Anthropic key, the default id of the ``sonnet`` alias.
KEY_DEFAULTS_RUN = (
    *KEY_DEFAULTS,
    ("ANTHROPIC_API_KEY", f"anthropic:{CLAUDE_ALIASES['sonnet'][1]}"),
)

LEAD_PROMPT = (
    "You are the lead agent. Answer the user's request. Delegate independent, context-heavy "
    "subtasks to subagents with agent_spawn, or build a team with createTeam when several "
    "specialists must coordinate; then combine their results into one clear answer."
)

EXAMPLES = (
    'agentscope-teams run --specs specs/ "Review src/ for security problems"',
    'agentscope-teams run --specs specs/ --session s1 --user alice "Continue the review"',
    "agentscope-teams run --specs examples/scripted_run/specs "
    '--model scripted:examples/scripted_run/script.yaml "Survey this project"',
)


def register(subparsers: SubParsers) -> None:
    parser = add_command(
        subparsers,
        "run",
        help="run a lead agent on a prompt, with the subagents of a spec directory",
        description="Run a lead agent on PROMPT; the subagents in --specs are available to it "
        "through agent_spawn (without a spec directory the lead works alone). The session is "
        "stored, so the same --session continues later.",
        examples=EXAMPLES,
    )
    parser.add_argument(
        "prompt",
        metavar="PROMPT",
        nargs="?",
        help="the user message; leave it out with --session to resume a tool call that a "
        "PreToolUse hook deferred (its hook runs again)",
    )
    parser.add_argument(
        "--specs",
        metavar="DIR",
        type=path_argument,
        help="subagent spec directory (default: ./specs if it exists, else ./.claude/agents if it "
        "exists, else no subagents)",
    )
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="model, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, sonnet; "
        "python:package.module:attribute (a ChatModel or a function returning one); or "
        "scripted:FILE, model turns from a JSON/YAML file (no key needed): a mapping from 'lead' "
        "or a spec name to a list of turns, each a string or {text, tool_calls: [{name, input}]}; "
        "'{task_id}' in an input is the task the agent was woken for",
    )
    parser.add_argument(
        "--session",
        metavar="SESSION",
        type=text_argument,
        help="session id to continue (default: a new session)",
    )
    parser.add_argument(
        "--mcp-config",
        metavar="PATH",
        type=path_argument,
        help="MCP servers for the lead and the tools its subagents' specs select: a .mcp.json or "
        "a directory holding one (default: the .mcp.json of the --specs project, if trusted)",
    )
    add_trust_option(parser)
    add_identity_options(parser)
    add_sandbox_option(parser)
    add_usage_options(parser, "this run's session (the lead, its subagents and teams' calls)")
    add_json_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    usage = usage_options(args)  # and the model string without its ?rate-limit query
    specs = _specs(args)
    model = _model(args.model, specs)
    project = specs if specs is not None else Path.cwd()
    trust = project_trust(args, project)
    loaded = load_specs(specs, strict=False).specs.values() if specs is not None else ()
    note = untrusted_note(project, loaded, trust)
    if note:
        print(f"note: {note}", file=sys.stderr, flush=True)
    memory = project_memory(specs, trust)
    if args.mcp_config is not None:
        require_mcp(args.mcp_config, "the lead")
    ctx = RuntimeContext(
        session_id=args.session or uuid.uuid4().hex[:12], user_id=args.user, org_id=args.org
    )
    summary = RunSummary(session_id=ctx.session_id, model=args.model or model.model_name)
    view = RunView(summary, json=args.json, resume=_again(args, ctx))
    if args.model == "offline" and not args.json:
        print("note: the offline model only plays the code-review team of `review`; "
              "try --model scripted:FILE to see run without a key")  # fmt: skip
    lead = partial(
        HarnessAgent,
        "lead",
        model,
        LEAD_PROMPT,
        workspace=Path.cwd(),
        workspace_scope="shared",
        specs=specs,
        trust_project=trust,
        project_memory=memory,
        sandbox=sandbox_option(args),
        mcp_servers=args.mcp_config,
    )
    try:
        with metering() as meter:
            return with_store(
                args,
                lambda store: _run(
                    args,
                    ctx,
                    lead(store=store, usage=usage.governor(store, "session")),
                    view,
                    meter,
                ),
            )
    except KeyboardInterrupt:
        return _interrupted(args, view, ctx)


async def _run(
    args: argparse.Namespace,
    ctx: RuntimeContext,
    agent: HarnessAgent,
    view: RunView,
    meter: UsageMeter,
) -> int:
    """One reply of the lead, streamed to ``view`` while a watcher reports its team."""
    started = time.monotonic()
    watcher = Watcher(LocalTeamClient(agent.store, ctx), view)
    async with agent as lead:
        # aclosing: an error stops the reply and saves it; the watcher polls the team meanwhile
        async with (
            anyio.create_task_group() as tg,
            aclosing(lead.stream(args.prompt, ctx)) as events,
        ):
            tg.start_soon(watcher.run)
            async for event in events:
                view.agent_event(event)
                if isinstance(event, ToolResultEvent):
                    watcher.note(event)
            tg.cancel_scope.cancel()
        await watcher.poll()
    view.summary.seconds = time.monotonic() - started
    view.summary.team_id = watcher.team_id
    # the token table before the summary, whose last line (run_end, or the session to
    # continue) stays the last
    if args.json:
        print_json_line(usage_json(meter))
    else:
        view.lines(usage_lines(meter))
    view.finish()
    return 0


def _usage_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with PROMPT and ``--session`` before anything runs, else None."""
    if args.prompt is None and args.session is None:
        return (
            "give a PROMPT (it may be left out only with --session, to resume a session whose "
            "tool call a hook deferred)"
        )
    where = undecodable_at(args.prompt or "")
    if where is not None:
        return (
            f"PROMPT is not valid UTF-8 ({where}); set a UTF-8 locale in the terminal "
            "(e.g. LANG=C.UTF-8) or pass the text in UTF-8"
        )
    return None


def _interrupted(args: argparse.Namespace, view: RunView, ctx: RuntimeContext) -> int:
    """Ctrl-C: the open line ended, ``interrupted`` on its own line, and how to continue."""
    view.end_line()
    again = _again(args, ctx)
    if args.json:
        print_json_line({"type": "interrupted", "session_id": ctx.session_id})
    print(
        f"interrupted\nsession {ctx.session_id} is saved; continue it with:\n  {again} "
        '"your next message"',
        file=sys.stderr,
        flush=True,
    )
    return EXIT_INTERRUPTED


def _again(args: argparse.Namespace, ctx: RuntimeContext) -> str:
    """The command that continues this run's session (without a prompt: add one, unless a tool
    call a hook deferred is what it resumes)."""
    again = f"agentscope-teams run --session {shlex.quote(ctx.session_id)}"
    again += identity_flags(args.user, args.org)
    if args.specs is not None:
        again += f" --specs {shlex.quote(str(args.specs))}"
    if getattr(args, "store", None):
        again += " --store URL"
    return again


def _specs(args: argparse.Namespace) -> Path | None:
    """``--specs`` (which must exist), else ``./specs`` if it exists, else the Claude Code
    project's ``./.claude/agents`` if it exists (as ``claude`` started here uses it), else None:
    no subagents."""
    if args.specs is not None:
        return spec_directory(args)
    for default in (Path("specs"), Path(".claude", "agents")):
        if default.is_dir():
            return default.resolve()
    return None


def _model(name: str | None, specs: Path | None) -> ChatModel:
    """``--model`` (any string ``model_from_string`` reads; ``scripted:FILE`` learns the lead's
    and the specs' prompts), else the model of the API key in the environment."""
    if name is None:
        name = next((model for var, model in KEY_DEFAULTS_RUN if os.environ.get(var)), None)
    if name is None:
        raise CommandError(
            "run needs a model: pass --model (e.g. openai:gpt-4o-mini, anthropic:claude-sonnet-4-5, "
            "or scripted:FILE to try it without a key) or set OPENAI_API_KEY, DASHSCOPE_API_KEY "
            "or ANTHROPIC_API_KEY"
        )
    if not name.strip().startswith(SCRIPTED):
        return model_from_string(name)
    prompts = {}
    if specs is not None:
        prompts = {
            n: spec.system_prompt for n, spec in load_specs(specs, strict=False).specs.items()
        }
    return model_from_string(name, lead_prompt=LEAD_PROMPT, specs=prompts)
