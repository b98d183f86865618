"""Workers: run members of teams found in the store, in processes and hosts other than the lead's.

``agentscope-teams worker --store URL --specs DIR --model M`` runs :class:`Worker`. It reads the team
directory (:mod:`..directory`; teams whose lead uses ``run_members="workers"`` or ``"any"``) when the
store signals that a record was written (the ``teams-signal`` channel; memory, Redis, PostgreSQL)
and every ``scan_every`` seconds as a fallback; on stores without signals it scans every ``poll``,
backing off while nothing changes (:class:`~.runtime.TeamRuntime`, "Discovery"). Its runtime
looks at the teams found every ``poll`` (or when a team's signal arrives) and takes members with
new work whose lease is free,
up to ``max_members`` at a time, building them from its own ``specs`` (a member whose spec it does
not have is left to other workers) and ``model`` (for specs without one). A killed worker's member
leases expire after ``lease_ttl`` and another worker (or a lead with ``"any"``) takes the members;
they finish the tasks they had claimed (same member name, same session).

Workspaces: a member uses the lead's workspace path recorded in the directory (shared specs) or a
directory under the lead's workspace root (isolated specs); ``workspace=`` overrides both, for a host
where the lead's paths do not exist.

Hooks: with ``hooks`` (the ``worker`` command passes the ``.claude/settings.json`` hooks of the
``--specs`` project when that project is trusted), a member runs the same hooks as a member run in
the lead's process: those, plus its spec's own ``hooks:``, and TaskCreated / TaskCompleted fire on
them (see ``docs/hooks.md``). A lead's hooks given in code (Python callables) stay in its process.

MCP tools: with ``mcp`` (an :class:`~agentscope_teams.mcp.McpToolset`), a member gets the MCP tools
its spec selects, as a member run in the lead's process does. The toolset belongs to whoever made
it (the ``worker`` command makes one and closes it once the worker has stopped its members), so the
servers its members started stop with the worker.

``--model`` takes every model string :func:`~agentscope_teams.model.model_from_string` reads, such
as ``"python:package.module:attribute"`` (a :class:`ChatModel` or a function returning one) and
``"scripted:FILE"`` (see :func:`model_option`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import ConfigurationError
from ...hooks import Hooks
from ...keys import directory_key, directory_signal
from ...model.base import ChatModel
from ...model.factory import model_from_string
from ...sandbox import Sandbox
from ...store.base import BaseStore, Key
from ...subagents.spec import SubagentSpec
from ...tools import PermissionEngine, Toolkit, filesystem_tools, shell_tools
from ...trust import ProjectTrust
from ..client import LocalTeamClient
from ..directory import TeamRuntimeRecord, delete_record, scan_records
from ..protocol import TeamClient
from ..rules import limits
from .builder import MemberBuilder
from .runtime import TeamRuntime
from .slot import TeamRef

if TYPE_CHECKING:
    from ...mcp import McpToolset
    from ...project_memory import ProjectMemory

PYTHON_PREFIX = "python:"


def model_option(text: str | None) -> ChatModel | None:
    """A model from ``--model``: any string :func:`~agentscope_teams.model.model_from_string`
    reads (``"provider:model"``, ``"python:module:attr"``, ``"scripted:FILE"``, a registered
    name). None stays None (specs must then name a model)."""
    return None if text is None else model_from_string(text)


@dataclass
class WorkerConfig:
    """How a worker runs members; see the module docs."""

    specs: Mapping[str, SubagentSpec]
    model: ChatModel | None = None
    workspace: Path | None = None
    max_members: int = 4
    poll: float = 1.0
    lease_ttl: float = 30.0
    task_lease: float = 60.0
    idle_release: float = 30.0
    orgs: Sequence[str] | None = None
    scan_every: float = 30.0
    #: The MCP servers members select tools of; the caller closes it after the worker stops.
    mcp: McpToolset | None = None
    #: Gives members the shell tools (``bash``...) running in this sandbox; None: no shell.
    sandbox: Sandbox | None = None
    #: The hooks members run (the ``worker`` command: the settings hooks of the ``--specs``
    #: project when it is trusted), each with its spec's own ``hooks:`` when ``trust`` allows.
    hooks: Hooks | None = None
    trust: ProjectTrust | None = None
    #: The project's CLAUDE.md memory members get in their system prompt (None: none).
    memory: ProjectMemory | None = None
    #: The rules every member starts from, as a lead's members start from the lead's (the
    #: ``worker`` command: the permission rules of the ``--specs`` project's settings files).
    permissions: PermissionEngine | None = None

    def __post_init__(self) -> None:
        if self.max_members < 1:
            raise ConfigurationError(f"max_members must be >= 1, got {self.max_members}")
        if self.workspace is not None and self.workspace.exists() and not self.workspace.is_dir():
            raise ConfigurationError(
                f"workspace {self.workspace} is not a directory; pass a folder for the members' files"
            )
        self.task_lease = limits.config_lease(self.task_lease)
        self.poll = limits.config_seconds(self.poll, "poll")
        self.lease_ttl = limits.config_seconds(self.lease_ttl, "lease_ttl")
        self.scan_every = limits.config_seconds(self.scan_every, "scan_every")
        self.idle_release = limits.config_seconds(
            self.idle_release, "idle_release", allow_zero=True
        )


class Worker:
    """Serves the members of every team in the directory (or of ``config.orgs`` only)."""

    def __init__(self, store: BaseStore, config: WorkerConfig) -> None:
        self.store, self.config = store, config
        self.refs: dict[Key, TeamRef] = {}
        self.runtime = TeamRuntime(
            store,
            lease_ttl=config.lease_ttl,
            poll=config.poll,
            idle_release=config.idle_release,
            max_members=config.max_members,
            discover=self.discover,
            discover_signal=directory_signal(),
            discover_every=config.scan_every,
        )

    def client(self, store: BaseStore, ctx: Any) -> TeamClient:
        return LocalTeamClient(
            store, ctx, task_lease=self.config.task_lease, hooks=self.config.hooks
        )

    async def discover(self) -> list[TeamRef]:
        """Scan the directory: the teams to serve now (refs are kept across scans, so members keep
        their state). The runtime calls it when a scan is due, not every step."""
        records: list[TeamRuntimeRecord] = []
        if self.config.orgs is None:
            records = [r async for r in scan_records(self.store)]
        else:
            for org in self.config.orgs:
                records += [r async for r in scan_records(self.store, org, any_org=False)]
        refs: dict[Key, TeamRef] = {}
        for record in records:
            if record.mode == "local":
                continue
            key = directory_key(record.context(), record.team_id)
            ref = refs[key] = self.refs.get(key) or self._ref(record)
            ref.budgets = record.budgets  # as the lead's last call left them
        self.refs = refs
        return list(refs.values())

    def _ref(self, record: TeamRuntimeRecord) -> TeamRef:
        ctx = record.context()
        cfg = self.config
        builder = MemberBuilder(
            store=self.store,
            specs=cfg.specs,
            client_factory=self.client,
            workspace=cfg.workspace or Path(record.workspace or "."),
            root=cfg.workspace or Path(record.root or "."),
            model=cfg.model,
            toolkit=Toolkit(
                [*filesystem_tools(), *(shell_tools(cfg.sandbox) if cfg.sandbox else [])]
            ),
            lease_ttl=cfg.lease_ttl,
            description=record.description,
            on_change=self.runtime.nudge,
            mcp=cfg.mcp,
            hooks=cfg.hooks,
            trust=cfg.trust,
            memory=cfg.memory,
            permissions=cfg.permissions,
        )

        async def gone() -> None:
            await delete_record(self.store, ctx, record.team_id)

        async def ended() -> None:  # a record left by a process from before ends parked it
            await LocalTeamClient(self.store, ctx).settle_directory(record.team_id)

        return TeamRef(
            ctx, record.team_id, builder, on_gone=gone, on_ended=ended, budgets=record.budgets
        )

    async def run(self) -> None:
        """Serve until cancelled; then stop the members and release their leases."""
        await self.runtime.serve_forever()

    async def aclose(self) -> None:
        await self.runtime.aclose()


async def run_worker(store: BaseStore, config: WorkerConfig) -> None:
    """Run a :class:`Worker` on ``store`` until cancelled."""
    await Worker(store, config).run()
