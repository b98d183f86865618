"""What a run needs checked or set up beside its spec: the session's run limits, what a parent in
plan mode may spawn, the repository an ``isolation: worktree`` run branches from, the skills the child preloads or may load, and the
warnings about a spec that asks for what this agent does not have (logged when specs load)."""

from __future__ import annotations

import logging
from pathlib import Path

from ..agent.extension import AgentView, CallScope, Extension
from ..context import RuntimeContext
from ..errors import ToolError
from ..mcp.tools import is_mcp_name
from ..skills import Skill, SkillExtension, SkillLibrary, find_skill
from ..state import PermissionMode
from ..tools.modes import child_mode, claude_name
from ..trust import ProjectTrust
from .grants import spec_mode
from .runs import RunRecord
from .spec import IsolationMode, SubagentSpec, WorkspaceMode
from .worktree import has_commit, repository_of

log = logging.getLogger("agentscope_teams.subagents.extension")  # the name users filter on


def warn_about(agent: AgentView, spec: SubagentSpec) -> None:
    """Log what in ``spec`` ``agent`` cannot give: unknown tools, an unusable workspace path."""
    own = [t for t in spec.tools or [] if not is_mcp_name(t) and not t.startswith("agent_")]
    unknown = agent.toolkit.unknown(own)
    if unknown:
        log.warning("subagent %s: %s are not tools of %s; ignored", spec.name, unknown, agent.name)
    path = spec.workspace.path
    if path is not None and spec.workspace.mode is WorkspaceMode.SHARED:
        log.warning("subagent %s: workspace.path is ignored in shared mode", spec.name)
    elif path is not None and not path.is_dir():
        log.warning("subagent %s: workspace.path %s is not a directory", spec.name, path)


def check_plan_spawn(
    spec: SubagentSpec,
    parent_mode: PermissionMode,
    trust: ProjectTrust,
    *,
    asked: PermissionMode | None = None,
) -> None:
    """A parent in plan mode may spawn only a child that runs in plan mode too (research that
    changes nothing, as Claude Code's plan mode delegates to its read-only Explore and Plan
    subagents); any other spawn is a tool error saying why. ``asked``: a mode the parent chose at
    spawn time (``spawnMember``'s ``permission_mode``, ``plan`` for ``plan_approval``), which
    then decides instead of the spec's (:func:`~agentscope_teams.tools.modes.child_mode`).
    ``agent_spawn`` and ``spawnMember`` are ``plan_checked``: the permission engine leaves this
    check to them."""
    if parent_mode != "plan":
        return
    if spec.a2a is not None:
        raise ToolError(
            f"you are in plan mode (read-only) and agent {spec.name} is a remote A2A agent, whose "
            "tools plan mode cannot restrict; spawn it after you leave plan mode"
        )
    if spec.isolation == "worktree":
        raise ToolError(
            f"you are in plan mode (read-only) and agent {spec.name} runs in a git worktree of "
            "its own (isolation: worktree), which adds a branch and a worktree to the "
            "repository; spawn it after you leave plan mode"
        )
    if asked is None:
        mode, origin = spec_mode(spec, parent_mode, trust), "its permissionMode"
    else:
        mode = child_mode(parent_mode, asked, "model", precedence=False).mode
        origin = "the permission_mode you gave it"
    if mode != "plan":
        raise ToolError(
            f"you are in plan mode (read-only) and agent {spec.name} would run in "
            f"{claude_name(mode)!r} mode ({origin}), which can change files or state; "
            "in plan mode spawn only agents that run in plan mode, or spawn it after you leave "
            "plan mode"
        )


class PreloadedSkills(Extension):
    """A child's ``skills:``, whole, at the end of its system prompt (Claude Code preloads them)."""

    def __init__(self, skills: list[Skill]) -> None:
        self.text = "\n\n".join(s.full_text() for s in skills)

    def system_prompt(self, scope: CallScope) -> str:
        return self.text


async def child_skills(
    skills: SkillLibrary | None, spec: SubagentSpec, ctx: RuntimeContext, *, tool: bool = True
) -> list[Extension]:
    """The child's skill extensions: its ``skills:`` preloaded, and the ``skill`` tool when its
    ``tools:`` allows it (no list, or one naming ``Skill``), ``disallowedTools`` does not, and
    ``tool`` (its parent has the tool: a child never gets more than its parent)."""
    if not skills:
        if spec.skills:
            log.warning("subagent %s lists skills but no skill folder is configured", spec.name)
        return []
    found: list[Extension] = []
    if spec.skills:
        available = await skills.skills(ctx)
        picked = {n: find_skill(available, n) for n in spec.skills}
        missing = [n for n, skill in picked.items() if skill is None]
        if missing:
            log.warning("subagent %s: skills %s not found; not preloaded", spec.name, missing)
        loaded = [skill for skill in picked.values() if skill is not None]
        if any(not skill.model_invocable for skill in loaded):
            user_only = [skill.name for skill in loaded if not skill.model_invocable]
            log.warning("subagent %s: skills %s are the user's only (disable-model-invocation); "
                        "not preloaded", spec.name, user_only)  # fmt: skip
            loaded = [skill for skill in loaded if skill.model_invocable]
        found.append(PreloadedSkills(loaded))
    allowed = tool and (spec.tools is None or "skill" in spec.tools)
    if allowed and "skill" not in spec.removed_tools:
        found.append(SkillExtension(skills))
    return found


def check_run_limits(
    active: list[RunRecord], max_concurrent: int, spec: SubagentSpec, label: str | None
) -> None:
    """A tool error when the session's ``active`` runs reach ``max_concurrent``, or ``label`` is
    in use by a running run of ``spec``."""
    if len(active) >= max_concurrent:
        raise ToolError(
            f"too many subagent runs: {len(active)} are running and the limit is "
            f"{max_concurrent} per session; wait for one (agent_wait) or cancel one"
        )
    busy = [r.run_id for r in active if label and r.spec == spec.name and r.label == label]
    if busy:
        raise ToolError(
            f"label {label!r} of agent {spec.name} is in use by running run {busy[0]}; "
            "send it a message (agent_send), wait for it, or use another label"
        )


async def repository_for(spec: SubagentSpec, workspace: Path) -> Path | None:
    """The git checkout an ``isolation: worktree`` run branches from (None for other specs)."""
    if spec.isolation is not IsolationMode.WORKTREE:
        return None
    repo = await repository_of(workspace)
    if repo is None:
        raise ToolError(
            f"agent {spec.name} has `isolation: worktree`, but the workspace "
            f"{workspace} is not inside a git repository; run the agent in a git "
            "checkout or remove `isolation` from the spec"
        )
    if not await has_commit(repo):
        raise ToolError(
            f"agent {spec.name} has `isolation: worktree`, but the git repository {repo} has "
            "no commit yet, and a worktree is made from the current commit; commit once "
            "(git add -A && git commit), or remove `isolation` from the spec"
        )
    return repo
