"""A spec with an ``a2a:`` block: the child's model is the remote agent (:mod:`agentscope_teams.a2a`)."""

from __future__ import annotations

from ..a2a.member import RemoteMemberModel
from ..a2a.remote import RemoteA2AModel, require_sdk
from ..errors import ConfigurationError, MissingDependencyError, ToolError
from ..mcp.config import expand_env
from ..model.base import ChatModel
from ..store.base import BaseStore
from ..trust import ProjectTrust
from .spawn import ModelPool
from .spec import SubagentSpec


def remote_model(
    spec: SubagentSpec, store: BaseStore, trust: ProjectTrust, *, member: bool = False
) -> ChatModel:
    """The model of a run of ``spec``: its remote agent, headers expanded.

    ``${VAR}`` in a spec file's headers is expanded only when its project is trusted (a spec
    file could otherwise send any environment variable to any URL); a spec made in code is the
    operator's. Every problem is a tool error naming the agent. ``member``: the model of a team
    member (:class:`~agentscope_teams.a2a.RemoteMemberModel`), which works the board for it.
    """
    config = spec.a2a
    assert config is not None
    try:
        require_sdk(f"agent {spec.name} (a remote A2A agent)")
    except MissingDependencyError as exc:
        raise ToolError(str(exc)) from exc
    if config.needs_expansion:
        if spec.source is not None and not trust.is_trusted(spec.source):
            trust.withhold("a2a headers", spec.name, spec.source)
            raise ToolError(
                f"agent {spec.name}: its a2a.headers use ${{VAR}}, which is expanded only for a "
                f"trusted project; trust {spec.source.parent} (agentscope-teams trust add PATH, "
                "--trust-project, trust_project=True) or write the values in"
            )
        try:
            config = config.expanded(expand_env)
        except Exception as exc:
            raise ToolError(f"agent {spec.name}: {exc}") from exc
    remote = RemoteA2AModel(spec.name, config, store)
    return RemoteMemberModel(remote) if member else remote


def a2a_member(
    spec: SubagentSpec, store: BaseStore, trust: ProjectTrust | None = None
) -> ChatModel:
    """The model of a team member of ``spec`` (which has an ``a2a:`` block): it claims each task,
    has the remote agent do it and completes it with the answer. ``${VAR}`` in its headers needs
    a trusted project, as for a subagent (``trust``, else the user's remembered decisions)."""
    try:
        return remote_model(spec, store, trust or ProjectTrust(), member=True)
    except ToolError as exc:
        raise ConfigurationError(str(exc)) from None


def member_model(
    pool: ModelPool, spec: SubagentSpec, store: BaseStore, trust: ProjectTrust | None
) -> ChatModel:
    """The model of a team member of ``spec``: the pool's, or :func:`a2a_member`'s for a remote
    agent (the one call the team builder makes)."""
    return pool.for_spec(spec) if spec.a2a is None else a2a_member(spec, store, trust)
