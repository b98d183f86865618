"""The public names of the package: acceptance checks import these, so they are pinned."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys

import agentscope_teams
from agentscope_teams import errors

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
    "ToolDeferredEvent",
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


#: The exception tree of ``agentscope_teams.errors``, every class exported at the top level.
ERROR_NAMES = {
    "AgentScopeTeamsError",
    "ConfigurationError",
    "MissingDependencyError",
    "OptionError",
    "CannotConvert",
    "StoreError",
    "VersionConflict",
    "LeaseLostError",
    "ValueTooLargeError",
    "StoreUnavailableError",
    "StoreBusyError",
    "SchemaVersionError",
    "EventIdError",
    "LimitError",
    "SessionBusyError",
    "SpecError",
    "SpecErrors",
    "SubagentError",
    "ChildPausedError",
    "TeamError",
    "ClaimConflict",
    "TaskStateError",
    "NotTaskOwnerError",
    "UnknownMemberError",
    "UnknownTeamError",
    "UnknownTaskError",
    "TaskBlockedError",
    "ToolError",
    "WebAccessError",
    "GitError",
    "HITLError",
    "OutputError",
    "OutputValidationError",
    "InvalidSchema",
    "ResultUnchecked",
    "OutputRetriesExceededError",
    "OutputTypeMismatchError",
    "SyncCallInsideLoopError",
    "CommandError",
    "ControlPlaneError",
    "ControlPlaneAuthError",
    "ModelError",
    "ModelConfigurationError",
    "AuthenticationError",
    "RateLimitError",
    "RateLimitWaitError",
    "BudgetExceededError",
    "UsageLimitError",
    "ModelServerError",
    "ModelConnectionError",
    "ModelTimeoutError",
    "ModelResponseError",
}


def test_all_is_exactly_what_the_module_exports() -> None:
    for name in agentscope_teams.__all__:
        assert hasattr(agentscope_teams, name), name
    assert len(set(agentscope_teams.__all__)) == len(agentscope_teams.__all__)


def test_spec_names_are_public() -> None:
    missing = (SPEC_NAMES | ERROR_NAMES) - set(agentscope_teams.__all__)
    assert not missing


def test_every_error_class_is_exported_at_the_top_level() -> None:
    defined = {
        name
        for name, cls in vars(errors).items()
        if inspect.isclass(cls)
        and issubclass(cls, BaseException)
        and cls.__module__ == errors.__name__
    }
    assert defined == ERROR_NAMES
    for name in defined:
        assert name in agentscope_teams.__all__, name
        assert getattr(agentscope_teams, name) is getattr(errors, name)
        assert issubclass(getattr(errors, name), errors.AgentScopeTeamsError), name


def _package_modules() -> list[str]:
    prefix = agentscope_teams.__name__ + "."
    return [
        info.name
        for info in pkgutil.walk_packages(agentscope_teams.__path__, prefix)
        if not info.name.endswith("__main__")
    ]


def test_every_error_of_the_package_is_defined_in_the_error_tree() -> None:
    """No module defines its own error class: the tree has one home, ``errors.py``."""
    for name in _package_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, errors.AgentScopeTeamsError):
                assert value.__module__ == errors.__name__, f"{name}.{attr}"


def test_errors_stay_importable_from_their_old_homes() -> None:
    from agentscope_teams.cli.common import CommandError
    from agentscope_teams.server import ControlPlaneAuthError, ControlPlaneError
    from agentscope_teams.server.errors import ControlPlaneError as ServerControlPlaneError
    from agentscope_teams.subagents import SpecErrors
    from agentscope_teams.subagents.child import ChildPausedError

    assert CommandError is errors.CommandError
    assert ControlPlaneError is ServerControlPlaneError is errors.ControlPlaneError
    assert ControlPlaneAuthError is errors.ControlPlaneAuthError
    assert SpecErrors is errors.SpecErrors
    assert ChildPausedError is errors.ChildPausedError
    assert issubclass(ChildPausedError, RuntimeError)


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
    """``import agentscope_teams`` loads only the error tree: the public names are imported on
    first use, so a process importing one submodule (a store, the command line) pays for no
    agents, tools, teams or review engine, nor for optional backends or SDKs."""
    heavy = (
        "agentscope_teams.review",
        "agentscope_teams.teams",
        "agentscope_teams.agent",
        "agentscope_teams.store",
        "agentscope_teams.tools",
        "pydantic",
        "redis",
        "sqlalchemy",
        "openai",
        "rich",
        "httpx",
    )
    code = (
        "import sys, agentscope_teams\n"
        f"heavy = {heavy!r}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m.startswith(heavy)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


#: Exception classes outside the tree: private signals, each caught inside the package (a retry
#: request, a parser's timeout or refusal, a pydantic validator's ValueError, a closed stdout).
INTERNAL_SIGNALS = {
    "agentscope_teams.agentscope_import.sources._Unrepresentable",
    "agentscope_teams.cli.exits.StdoutClosed",
    "agentscope_teams.mcp.connection.ServerGone",
    "agentscope_teams.schema_guard._TooSlow",
    "agentscope_teams.store.sql.database.Retry",
    "agentscope_teams.subagents._fields.BadToolEntry",
    "agentscope_teams.subagents._fields.BadOutputSchema",
    "agentscope_teams.teams.queues.base.TeamChanged",
    "agentscope_teams.tools.shell_parse.Unparsed",
}


def test_every_exception_class_is_in_the_tree_or_a_listed_internal_signal() -> None:
    """docs/architecture.md and errors.py promise one tree: a new exception class joins it."""
    outside = set()
    for name in _package_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == name
                and not issubclass(value, errors.AgentScopeTeamsError)
            ):
                outside.add(f"{name}.{attr}")
    assert outside <= INTERNAL_SIGNALS, (
        f"put these under AgentScopeTeamsError: {outside - INTERNAL_SIGNALS}"
    )


def test_errors_moved_into_the_tree_keep_their_old_home_and_base() -> None:
    from agentscope_teams.agentscope_import import CannotConvert

    assert CannotConvert is errors.CannotConvert
    assert issubclass(CannotConvert, ValueError)
    assert issubclass(errors.OptionError, TypeError)
