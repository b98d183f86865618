"""``agentscope-teams worker --store URL``: run team member loops taken from a shared store.

The worker serves teams whose lead runs with ``run_members="workers"`` (or ``"any"``), found in the
store's team directory; see :mod:`agentscope_teams.teams.member.worker`. It runs until interrupted (Ctrl-C
or SIGTERM), then stops its members and releases their leases so another worker takes them at once.
With ``--exit-with-parent`` it also stops that way when the process that started it is gone (the
workers ``review --workers N`` starts, so a killed review leaves none behind).
``--model`` takes every model string ``run --model`` and ``model_from_string`` take, including
``python:package.module:attribute`` (a ChatModel from Python) and ``scripted:FILE`` (turns from a
file, under each spec's name).

Members get the MCP tools their spec selects, as in the lead's process: the servers come from
``--mcp-config`` (a ``.mcp.json`` or a directory holding one: the operator's, always enabled),
else from the project ``.mcp.json`` of ``--specs`` when there is one
(:func:`~agentscope_teams.compose.project_mcp_json`, as ``HarnessAgent`` finds a lead's) if the
project is trusted (``--trust-project``); the same holds for ``mcpServers`` inline in its spec
files. The start line names the servers left off and how to enable them. This command owns the
servers: it stops them after the worker has stopped its members. ``--sandbox`` chooses where
the members' ``bash`` tool runs commands (:mod:`.sandbox_option`). ``--metrics-port`` serves
``/metrics``, ``/healthz`` and ``/readyz`` on ``--metrics-host`` (default 127.0.0.1) while the
worker runs (:mod:`.metrics_http`). Members get the project's ``CLAUDE.md`` memory in their
system prompt, found as ``run`` finds the lead's (:func:`.trust_cmd.project_memory`).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

import anyio

from ..compose import project_mcp_json
from ..errors import CommandError
from ..hooks import Hooks, project_settings
from ..hooks.settings_rules import settings_permission_rules
from ..mcp import McpToolset
from ..mcp.project import project_servers
from ..model import ChatModel
from ..model.script_file import ScriptFileModel
from ..store.base import BaseStore
from ..store.capabilities import capabilities_of
from ..store.redact import redact_url
from ..subagents.spec import SubagentSpec, load_specs
from ..teams.member.worker import Worker, WorkerConfig, model_option
from ..tools import PermissionEngine
from ..trust import ProjectTrust, project_root
from .common import (
    SubParsers,
    add_command,
    path_argument,
    port_number,
    require_mcp,
    store_url,
    with_store,
)
from .heap import freeze_startup_heap
from .metrics_http import serve_metrics
from .sandbox_option import add_sandbox_option, sandbox_option
from .trust_cmd import add_trust_option, project_memory, project_trust, untrusted_note
from .usage_option import add_usage_options, usage_options

ORPHAN_CHECK_SECONDS = 1.0

EXAMPLES = (
    "agentscope-teams worker --store redis://localhost:6379/0 --model openai:gpt-4o-mini",
    "agentscope-teams worker --store postgresql://app@db/teams --max-members 8 --specs specs/",
)


def register(subparsers: SubParsers) -> None:
    parser = add_command(
        subparsers,
        "worker",
        help="run team members in this process, taking them and their tasks from the store",
        description="Run member loops of teams in other processes or hosts: the worker takes "
        "members and tasks from the shared store named by --store (required; a store shared "
        "across processes, e.g. Redis, SQL or a file store on this host).",
        examples=EXAMPLES,
        store_required=True,
    )
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="model of members whose spec names none, e.g. openai:gpt-4o, "
        "anthropic:claude-sonnet-4-5, python:package.module:attribute or scripted:FILE (as in "
        "run; the turns under each spec's name) (default: each spec's own model)",
    )
    parser.add_argument(
        "--specs",
        metavar="DIR",
        type=path_argument,
        default=Path("specs"),
        help="spec directory of the members it runs (default: ./specs, from the current directory)",
    )
    _add_run_options(parser)
    parser.set_defaults(handler=handle)


def _add_run_options(parser: argparse.ArgumentParser) -> None:
    """How many members, how often, which leases, workspace, orgs, MCP, sandbox, metrics."""
    parser.add_argument(
        "--max-members",
        metavar="N",
        type=int,
        default=4,
        help="members this worker runs at once (default 4)",
    )
    parser.add_argument(
        "--poll",
        metavar="SECONDS",
        type=float,
        default=1.0,
        help="seconds between looks for new members and tasks (default 1)",
    )
    parser.add_argument(
        "--lease-ttl",
        metavar="SECONDS",
        type=float,
        default=30.0,
        help="member lease: another worker takes a member this long after this one died "
        "(default 30)",
    )
    parser.add_argument(
        "--workspace",
        metavar="DIR",
        type=path_argument,
        help="workspace for the members (default: the lead's, as recorded in the store)",
    )
    parser.add_argument(
        "--org", metavar="ORG", action="append", help="serve only teams of this org (repeatable)"
    )
    parser.add_argument(
        "--mcp-config",
        metavar="PATH",
        type=path_argument,
        help="MCP servers whose tools the members' specs select: a .mcp.json or a directory "
        "holding one (default: the .mcp.json of the --specs project, if any and trusted)",
    )
    add_trust_option(parser)
    parser.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="stop (as on SIGTERM) when the process that started this worker exits, even if it "
        "was killed; for workers started by another program",
    )
    add_sandbox_option(parser)
    add_usage_options(parser, "each team it serves that sets none")
    _add_metrics_options(parser)


def _add_metrics_options(parser: argparse.ArgumentParser) -> None:
    """Where the worker serves its metrics and health checks."""
    parser.add_argument(
        "--metrics-port",
        metavar="PORT",
        type=port_number,
        help="serve Prometheus /metrics and the /healthz and /readyz checks on this port "
        "(default: none)",
    )
    parser.add_argument(
        "--metrics-host",
        metavar="HOST",
        default="127.0.0.1",
        help="address of --metrics-port (default 127.0.0.1; no authentication: keep it private)",
    )


def mcp_config_path(args: argparse.Namespace) -> Path | None:
    """``--mcp-config``, else the project ``.mcp.json`` of ``--specs``, else None (no servers)."""
    given: Path | None = args.mcp_config
    return given if given is not None else project_mcp_json(args.specs)


def toolset(args: argparse.Namespace, trust: ProjectTrust) -> McpToolset:
    """The members' MCP servers: ``--mcp-config`` (the operator's), else the project's own if
    it is trusted."""
    if args.mcp_config is not None:
        return McpToolset.from_config(args.mcp_config, trust=trust)
    found = project_mcp_json(args.specs)
    return McpToolset.from_config(project_servers(found, trust) if found else None, trust=trust)


def handle(args: argparse.Namespace) -> int:
    mcp_path = mcp_config_path(args)
    trust = project_trust(args, args.specs)
    mcp = toolset(args, trust)
    specs = load_specs(args.specs).specs
    note = untrusted_note(args.specs, specs.values(), trust)
    if mcp.servers and mcp_path is not None:
        require_mcp(mcp_path, "the members")
    usage = usage_options(args)  # and the model string without its ?rate-limit query
    config = WorkerConfig(
        specs=specs,
        model=_model(args.model, specs),
        workspace=args.workspace.resolve() if args.workspace else None,
        max_members=args.max_members,
        poll=args.poll,
        lease_ttl=args.lease_ttl,
        orgs=args.org,
        mcp=mcp,
        sandbox=sandbox_option(args),
        hooks=_worker_hooks(args.specs, trust),
        trust=trust,
        memory=project_memory(args.specs, trust) or None,
        permissions=_worker_permissions(args.specs, trust),
    )
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    async def body(store: BaseStore) -> int:
        _require_shared(store, store_url(args))
        worker = Worker(store, config)
        freeze_startup_heap()  # the worker's long-lived objects exist: out of the collector's way
        print(
            f"worker serving {len(config.specs)} specs, up to {config.max_members} members"
            f"{_mcp_note(mcp, mcp_path)}; Ctrl-C to stop" + (f"\nnote: {note}" if note else ""),
            file=sys.stderr,
            flush=True,
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_stop_on_signal, tg.cancel_scope)
                if args.exit_with_parent:
                    tg.start_soon(_stop_when_orphaned, tg.cancel_scope, os.getppid())
                if args.metrics_port is not None:
                    port = await tg.start(
                        serve_metrics, store, args.metrics_host, args.metrics_port
                    )
                    print(
                        f"metrics on http://{args.metrics_host}:{port}/metrics",
                        file=sys.stderr,
                        flush=True,
                    )
                governor = usage.governor(store, "team")
                with governor.bind() if governor is not None else contextlib.nullcontext():
                    await worker.run()
                tg.cancel_scope.cancel()  # the worker stopped: so does the metrics server
        finally:  # after the members stopped: no MCP server outlives the worker
            await mcp.aclose()
        return 0

    return with_store(args, body)


def _require_shared(store: BaseStore, url: str) -> None:
    """Refuse a store no other process can write to (a worker there would wait forever)."""
    if not capabilities_of(store).shared_across_processes:
        raise CommandError(
            f"--store {redact_url(url)}: a worker takes members from a store other processes write to, and "
            "this store lives only in this process; use a file, SQL or Redis store shared with "
            "the lead"
        )


def _worker_permissions(specs: Path, trust: ProjectTrust) -> PermissionEngine | None:
    """The members' starting rules: the permission rules of the ``--specs`` project's settings
    files (deny and ask always, allow when it is trusted), as the lead of ``run`` has them."""
    rules = settings_permission_rules(specs, trust)
    return PermissionEngine(rules) if rules else None


def _worker_hooks(specs: Path, trust: ProjectTrust) -> Hooks:
    """The members' hooks: the managed settings' and the trusted project's, under the policy the
    settings set (``docs/hooks.md``)."""
    file_hooks, policy = project_settings(specs, trust)
    return Hooks(file_hooks, project_dir=project_root(specs), policy=policy)


def _model(name: str | None, specs: Mapping[str, SubagentSpec]) -> ChatModel | None:
    """``--model``; a ``scripted:FILE`` model learns the specs' prompts to tell members apart."""
    model = model_option(name)
    if isinstance(model, ScriptFileModel):
        model.know_specs({n: spec.system_prompt for n, spec in specs.items()})
    return model


def _mcp_note(mcp: McpToolset, path: Path | None) -> str:
    """``, MCP servers [a, b] of PATH`` for the start line, or nothing without servers."""
    if not mcp.servers:
        return ""
    return f", MCP servers {sorted(mcp.servers)} of {path}"


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            scope.cancel()
            return


async def _stop_when_orphaned(scope: anyio.CancelScope, parent: int) -> None:
    """Cancel ``scope`` once this process's parent is no longer ``parent`` (it exited: the process
    was handed to another one), checked once a second."""
    while True:  # polled: nothing signals a parent's death portably
        await anyio.sleep(ORPHAN_CHECK_SECONDS)
        if os.getppid() != parent:
            break
    logging.getLogger(__name__).warning(
        "the process that started this worker (pid %d) is gone: stopping", parent
    )
    scope.cancel()
