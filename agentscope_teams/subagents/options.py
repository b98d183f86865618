"""The subagent options of ``HarnessAgent(..., specs=...)``: one group, typed and checked.

:class:`SubagentOptions` declares them (``HarnessAgent(specs=..., max_depth=3)``, or a group
passed whole: ``opts: SubagentOptions = {"max_depth": 3}; HarnessAgent(..., **opts)``);
:func:`check_subagent_options` checks their names, types and values when the agent (or a
:class:`~.extension.SubagentExtension`) is built. A new subagent option is one more key here.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from ..agent.options import check_options
from ..errors import ConfigurationError
from ..model.base import ChatModel

__all__ = ["SubagentOptions", "check_subagent_options"]


class SubagentOptions(TypedDict, total=False):
    """Options of the subagents built from ``specs`` (docs/reference/specs.md)."""

    #: How deep subagents may nest (default 2; a child at the limit gets no ``agent_spawn``).
    max_depth: int
    #: Background runs one session may have at once (default 4).
    max_concurrent: int
    #: A spec's ``model:`` (e.g. ``sonnet``) -> a model string, applied first.
    model_aliases: Mapping[str, str] | None
    #: Where isolated run directories go (default: the agent's workspace).
    workspace_root: Path | str | None
    #: A spec's ``model:`` name -> a model object, looked up before ``provider:model`` parsing.
    models: Mapping[str, ChatModel] | None


def check_subagent_options(where: str, options: Mapping[str, Any]) -> None:
    """Raise :class:`~agentscope_teams.errors.OptionError` for an unknown or mistyped option and
    :class:`~agentscope_teams.errors.ConfigurationError` for a limit below 1."""
    check_options(where, options, SubagentOptions)
    for name in ("max_depth", "max_concurrent"):
        value = options.get(name)
        if value is not None and value < 1:
            raise ConfigurationError(f"{where}: {name} must be >= 1, got {value}")
