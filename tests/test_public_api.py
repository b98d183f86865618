"""The public names of the package: acceptance checks import these, so they are pinned."""

from __future__ import annotations

import subprocess
import sys

import agentscope_teams

SPEC_NAMES = {
    "RuntimeContext",
    "current_context",
    "AgentState",
    "Msg",
    "UserMsg",
    "AssistantMsg",
    "SystemMsg",
    "TextBlock",
    "ToolUseBlock",
    "ToolResultBlock",
    "DataBlock",
    "AgentScopeTeamsError",
    "ConfigurationError",
    "VersionConflict",
    "SessionBusyError",
    "SpecError",
    "ClaimConflict",
    "HarnessAgent",
    "ReActAgent",
    "ReActConfig",
    "ScriptedModel",
    "OpenAIChatModel",
    "model_from_string",
    "RequireUserConfirmEvent",
    "UserConfirmResultEvent",
    "ConfirmResult",
    "UserInterruptEvent",
    "ExceedMaxItersEvent",
    "SubagentSpec",
    "WorkspaceMode",
    "load_specs",
    "SessionStorage",
    "InMemoryStore",
    "store_from_url",
}


def test_all_is_exactly_what_the_module_exports() -> None:
    for name in agentscope_teams.__all__:
        assert hasattr(agentscope_teams, name), name
    assert len(set(agentscope_teams.__all__)) == len(agentscope_teams.__all__)


def test_spec_names_are_public() -> None:
    missing = SPEC_NAMES - set(agentscope_teams.__all__)
    assert not missing


def test_submodule_names_from_the_spec() -> None:
    from agentscope_teams.sessions import (  # noqa: F401
        RedisStorage,
        SessionConfig,
        SessionRecord,
        SessionSource,
        SessionStorage,
    )
    from agentscope_teams.store import (  # noqa: F401
        BaseStore,
        Entry,
        InMemoryStore,
        JsonFileStore,
        RedisStore,
        SqlStore,
    )
    from agentscope_teams.teams import LocalTeamClient, TeamClient  # noqa: F401

    assert callable(agentscope_teams.store_from_url)


def test_the_top_level_import_stays_cheap() -> None:
    """``import agentscope_teams`` loads neither the review engine nor optional backends or SDKs."""
    heavy = ("agentscope_teams.review", "redis", "sqlalchemy", "openai", "rich", "httpx")
    code = (
        "import sys, agentscope_teams\n"
        f"heavy = {heavy!r}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
