"""What the subagent tools return: typed results, each rendered once into the model's text."""

from __future__ import annotations

from typing import Any, Literal

from ..tools import ToolOutput
from .runs import RunRecord, RunStatus

_LISTED = 50


class RunBrief(ToolOutput):
    """One run as the tools show it."""

    run_id: str
    spec: str
    status: RunStatus
    label: str | None = None
    result: str | None = None
    error: str | None = None

    @classmethod
    def of(cls, rec: RunRecord) -> RunBrief:
        return cls(
            run_id=rec.run_id,
            spec=rec.spec,
            status=rec.status,
            label=rec.label,
            result=rec.result,
            error=rec.error,
        )

    def render(self) -> str:
        label = f" label={self.label}" if self.label else ""
        text = (self.result if self.status is RunStatus.COMPLETED else self.error) or ""
        preview = " ".join(text.split())[:100]
        line = f"{self.run_id} agent={self.spec}{label} status={self.status}"
        return line + (f": {preview}" if preview else "")


class RunCompleted(ToolOutput):
    """A run's final answer (a failed run is a tool error instead), with ``stopped`` when a
    SubagentStop hook stopped it; ``output`` is its validated
    structured output (JSON) when the spec declares one (``output:``), else None. Code reads it
    from ``ToolResultBlock.data["output"]`` (:func:`~agentscope_teams.tools.output_of`)."""

    run_id: str
    spec: str
    result: str
    output: Any = None
    #: Why a SubagentStop hook stopped the run (``continue: false``), as shown beside the
    #: result ("" when none did: :meth:`RunRecord.stop_note`).
    stopped: str = ""

    def render(self) -> str:
        text = f"Run {self.run_id} ({self.spec}) completed:\n{self.result}"
        return f"{text}\n\n{self.stopped}" if self.stopped else text


class RunStarted(ToolOutput):
    """agent_spawn with timeout 0: the run started in the background."""

    run_id: str
    spec: str

    def render(self) -> str:
        return (
            f"Started run {self.run_id} ({self.spec}) in the background. Its result will be "
            "delivered to you as a message when it ends; agent_wait, agent_send and agent_cancel "
            "take its run id."
        )


class RunPending(ToolOutput):
    """A run still going after a wait: ``background`` when it was moved to the background."""

    run_id: str
    spec: str
    status: RunStatus
    seconds: float
    background: bool

    def render(self) -> str:
        if self.background:
            return (
                f"Run {self.run_id} ({self.spec}) is still running after {self.seconds:g}s; it "
                "continues in the background and its result will be delivered to you as a "
                f"message when it ends (run id {self.run_id})."
            )
        return f"Run {self.run_id} is still {self.status} after {self.seconds:g}s."


class MailQueued(ToolOutput):
    """agent_send to a running child: queued for its next step."""

    run_id: str

    def render(self) -> str:
        return f"Queued for run {self.run_id}; the subagent reads it before its next step."


class RunCancel(ToolOutput):
    """agent_cancel: what happened (``requested``: another process runs it and will stop it)."""

    run_id: str
    spec: str
    outcome: Literal["cancelled", "requested", "already-ended", "ended-first"]
    status: RunStatus
    within_seconds: float = 0.0

    def render(self) -> str:
        if self.outcome == "already-ended":
            return f"Run {self.run_id} already ended ({self.status}); nothing to cancel."
        if self.outcome == "requested":
            return (
                f"Cancellation of run {self.run_id} requested; the process running it stops it "
                f"within about {self.within_seconds:.0f}s (agent_list shows its status)."
            )
        if self.outcome == "cancelled":
            return f"Run {self.run_id} ({self.spec}) cancelled; its workspace was removed."
        return (
            f"Run {self.run_id} ({self.spec}) ended as {self.status} before it could be cancelled."
        )


class RunListing(ToolOutput):
    """agent_list: the newest runs of the session (``older``: how many more are not shown)."""

    runs: list[RunBrief]
    older: int = 0

    @classmethod
    def of(cls, records: list[RunRecord]) -> RunListing:
        shown = records[-_LISTED:]
        return cls(runs=[RunBrief.of(r) for r in shown], older=len(records) - len(shown))

    def render(self) -> str:
        if not self.runs:
            return "No subagent runs in this session."
        lines = [r.render() for r in self.runs]
        return "\n".join(([f"({self.older} older runs not shown)"] if self.older else []) + lines)
