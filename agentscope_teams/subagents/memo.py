"""``SubagentMemo``: what a parent session remembers about its subagent runs (saved in its state)."""

from __future__ import annotations

from pydantic import Field

from ..state import ExtensionState

_DELIVERED_KEPT = 100


class SubagentMemo(ExtensionState):
    """Runs the session waits for (``watch``) and notices a tool already returned (``delivered``,
    as ``"<run_id>:<status>"``, the newest 100), so they are not injected a second time."""

    KEY = "subagents"
    SCHEMA_VERSION = 1

    watch: list[str] = Field(default_factory=list)
    delivered: list[str] = Field(default_factory=list)

    def add_watch(self, run_id: str) -> None:
        if run_id not in self.watch:
            self.watch.append(run_id)

    def unwatch(self, run_id: str) -> None:
        if run_id in self.watch:
            self.watch.remove(run_id)

    def mark_delivered(self, run_id: str, status: str) -> None:
        """A run's result was returned by a tool: do not inject its notice too."""
        self.delivered = [*self.delivered[-(_DELIVERED_KEPT - 1) :], f"{run_id}:{status}"]
        self.unwatch(run_id)
