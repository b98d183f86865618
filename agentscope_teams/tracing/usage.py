"""Token usage per agent for one command: the CLI's end-of-run totals.

A :class:`UsageMeter` installed with :func:`metering` collects the usage every model response of the
block reports, keyed by agent name, including the subagent runs and in-process team members it starts
(their tasks keep the meter through :func:`~.active.fresh_context`). Members in other processes
report to their own process. Without a meter, :func:`record_usage` costs one ``ContextVar.get``.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class AgentUsage:
    """Reported tokens of one agent's model requests."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class UsageMeter:
    """Usage per agent name, in the order agents first reported."""

    agents: dict[str, AgentUsage] = field(default_factory=dict)

    def add(self, agent: str, input_tokens: int, output_tokens: int, requests: int = 1) -> None:
        """Add ``requests`` responses' reported tokens (one response by default) to ``agent``."""
        found = self.agents.setdefault(agent, AgentUsage())
        found.input_tokens += input_tokens
        found.output_tokens += output_tokens
        found.requests += requests

    @property
    def total(self) -> AgentUsage:
        out = AgentUsage()
        for u in self.agents.values():
            out.input_tokens += u.input_tokens
            out.output_tokens += u.output_tokens
            out.requests += u.requests
        return out


METER: contextvars.ContextVar[UsageMeter | None] = contextvars.ContextVar(
    "agentscope_teams_usage", default=None
)

#: The budgets and rate limits that govern model calls here (a ``usage.governor.Scope``, set by
#: :mod:`agentscope_teams.usage`); kept here so :func:`~.active.fresh_context` carries it too.
GOVERNANCE: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "agentscope_teams_governance", default=None
)


@contextmanager
def metering() -> Iterator[UsageMeter]:
    """Collect the reported usage of every model response in the block."""
    meter = UsageMeter()
    token = METER.set(meter)
    try:
        yield meter
    finally:
        METER.reset(token)


def record_usage(agent: str, input_tokens: int, output_tokens: int) -> None:
    """Add one response's reported usage to the running meter, if any."""
    meter = METER.get()
    if meter is not None:
        meter.add(agent, input_tokens, output_tokens)
