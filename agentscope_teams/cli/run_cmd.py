"""``agentscope-teams run --specs DIR "prompt"``: one turn of a lead agent with subagents.

The lead gets the spec directory's subagents (``agent_spawn`` and friends) and the team tools; its
workspace is the current directory. The model comes from ``--model`` or from the API key found in
the environment; there is no offline default here (the offline model only knows how to review).
"""

from __future__ import annotations

import argparse
import os
import uuid
from contextlib import aclosing
from pathlib import Path

from ..compose import HarnessAgent
from ..context import RuntimeContext
from ..events import ReplyEndEvent, ToolCallEvent
from ..model import ChatModel
from ..store.base import BaseStore
from ..teams.worker import model_option
from ..tracing import metering
from .common import (
    CommandError,
    SubParsers,
    abbreviate,
    add_command,
    add_identity_options,
    add_json_option,
    print_json_line,
    with_store,
)
from .review_cmd import KEY_DEFAULTS
from .usage_view import usage_json, usage_lines

LEAD_PROMPT = (
    "You are the lead agent. Answer the user's request. Delegate independent, context-heavy "
    "subtasks to subagents with agent_spawn, or build a team with createTeam when several "
    "specialists must coordinate; then combine their results into one clear answer."
)

EXAMPLES = (
    'agentscope-teams run --specs specs/ "Review src/ for security problems"',
    'agentscope-teams run --specs specs/ --session s1 --user alice "Continue the review"',
)


def register(subparsers: SubParsers) -> None:
    parser = add_command(
        subparsers,
        "run",
        help="run a lead agent on a prompt, with the subagents of a spec directory",
        description="Run a lead agent on PROMPT; the subagents in --specs are available to it "
        "through agent_spawn. The session is stored, so the same --session continues later.",
        examples=EXAMPLES,
    )
    parser.add_argument("prompt", metavar="PROMPT", help="the user message")
    parser.add_argument(
        "--specs", metavar="DIR", type=Path, default=Path("specs"), help="subagent spec directory"
    )
    parser.add_argument("--model", metavar="MODEL", help="model, e.g. openai:gpt-4o")
    parser.add_argument(
        "--session", metavar="SESSION", help="session id to continue (default: a new session)"
    )
    add_identity_options(parser)
    add_json_option(parser)
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    model = _model(args.model)
    specs = args.specs.resolve()
    if not specs.is_dir():
        raise CommandError(f"spec directory {args.specs} does not exist; pass one with --specs")
    ctx = RuntimeContext(
        session_id=args.session or uuid.uuid4().hex[:12], user_id=args.user, org_id=args.org
    )

    async def body(store: BaseStore) -> int:
        async with HarnessAgent(
            "lead",
            model,
            LEAD_PROMPT,
            workspace=Path.cwd(),
            workspace_scope="shared",
            specs=specs,
            store=store,
        ) as lead:
            final = ""
            async with aclosing(lead.stream(args.prompt, ctx)) as events:  # stop + save on errors
                async for event in events:
                    if args.json:
                        print_json_line(event.model_dump(mode="json"))
                    elif isinstance(event, ToolCallEvent):
                        call = event.tool_call
                        print(f"-> {call.name}({abbreviate(str(call.input), 100)})")
                    elif isinstance(event, ReplyEndEvent):
                        final = event.msg.get_text_content()
            if not args.json:
                print(final)
                print(f"\nsession {ctx.session_id} (continue with --session {ctx.session_id})")
        return 0

    with metering() as meter:
        code = with_store(args, body)
    if args.json:
        print_json_line(usage_json(meter))
    else:
        print("\n".join(usage_lines(meter)))
    return code


def _model(name: str | None) -> ChatModel:
    """``--model`` (including ``python:module:attr``), else the model of the API key in the env."""
    if name is None:
        name = next((model for var, model in KEY_DEFAULTS if os.environ.get(var)), None)
    if name is None:
        raise CommandError(
            "run needs a model: pass --model (e.g. openai:gpt-4o-mini, dashscope:qwen-plus) "
            "or set OPENAI_API_KEY or DASHSCOPE_API_KEY"
        )
    model = model_option(name)
    assert model is not None
    return model
