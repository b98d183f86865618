"""A minimal in-memory team with the team tools' names and arguments, to drive OfflineReviewModel.

Not the real runtime (that one is tested end to end through the CLI): members run one after the
other, inside ``waitForTeam``, each for one reply, so a run is fully deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentscope_teams.agent.output import OutputType
from agentscope_teams.agent.react import ReActAgent, ReplyOptions
from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import Msg
from agentscope_teams.model import ChatModel
from agentscope_teams.state import AgentState
from agentscope_teams.teams.results import (
    MemberSpawned,
    TaskAssigned,
    TaskBrief,
    TaskClaimed,
    TeamCreated,
    TeamWaited,
)
from agentscope_teams.teams.rules.models import TaskStatus
from agentscope_teams.tools import Tool, ToolEnv, Toolkit, filesystem_tools, tool

SPECS = Path(__file__).resolve().parents[2] / "agentscope_teams" / "review" / "specs"


@dataclass
class StubTask:
    id: str
    title: str
    description: str
    assignee: str | None
    status: str = "pending"
    owner: str | None = None
    result: str = ""
    result_schema: dict[str, Any] | None = None
    result_data: Any = None


@dataclass
class StubTeam:
    model: ChatModel
    workspace: Path
    tasks: dict[str, StubTask] = field(default_factory=dict)
    members: dict[str, str] = field(default_factory=dict)
    messages: list[tuple[str, str, str]] = field(default_factory=list)
    states: dict[str, AgentState] = field(default_factory=dict)

    def board(self) -> list[TaskBrief]:
        return [
            TaskBrief(
                id=t.id,
                title=t.title,
                status=TaskStatus(t.status),
                owner=t.owner,
                assignee=t.assignee,
                result=t.result or None,
                result_schema=t.result_schema,
                result_data=t.result_data,
            )
            for t in self.tasks.values()
        ]

    def lead_tools(self) -> list[Tool]:
        @tool
        def createTeam(name: str, description: str = "") -> TeamCreated:
            """Create the team."""
            specs = sorted(p.stem for p in SPECS.glob("*.md"))
            return TeamCreated(team_id="team-1", name=name, lead="lead", specs=specs)

        @tool
        def spawnMember(name: str, spec: str, team_id: str | None = None) -> MemberSpawned:
            """Spawn a member."""
            if not (SPECS / f"{spec}.md").exists():
                raise ValueError(f"unknown spec {spec}")
            self.members[name] = spec
            return MemberSpawned(team_id="team-1", member=name, spec=spec, runs_in="local")

        @tool
        def assignTask(
            title: str,
            description: str = "",
            assignee: str | None = None,
            blocked_by: list[str] | None = None,
            team_id: str | None = None,
            result_schema: dict[str, Any] | None = None,
        ) -> TaskAssigned:
            """Assign a task."""
            task = StubTask(f"t-{len(self.tasks) + 1}", title, description, assignee)
            task.result_schema = result_schema
            self.tasks[task.id] = task
            brief = TaskBrief(id=task.id, title=title, status=TaskStatus.PENDING, assignee=assignee)
            return TaskAssigned(task=brief)

        @tool
        async def waitForTeam(
            timeout_seconds: float = 120, team_id: str | None = None
        ) -> TeamWaited:
            """Run every member once, then summarize the board."""
            for name in self.members:
                await self.run_member(name)
            return TeamWaited(done=True, seconds=timeout_seconds, tasks=self.board())

        return [createTeam, spawnMember, assignTask, waitForTeam]

    def member_tools(self, me: str) -> list[Tool]:
        @tool
        def claimTask(task_id: str | None = None) -> TaskClaimed:
            """Claim the next task."""
            for t in self.tasks.values():
                if t.status == "pending" and t.assignee in (None, me):
                    t.status, t.owner = "in_progress", me
                    status = TaskStatus(t.status)
                    brief = TaskBrief(
                        id=t.id,
                        title=t.title,
                        status=status,
                        owner=me,
                        result_schema=t.result_schema,
                    )
                    return TaskClaimed(member=me, task=brief, description=t.description)
            return TaskClaimed(member=me)

        @tool
        def completeTask(task_id: str, result: str, data: Any = None) -> str:
            """Complete a task (``data`` checked against its schema, as the board does)."""
            t = self.tasks[task_id]
            assert t.owner == me
            if t.result_schema is not None:
                data = OutputType.from_schema(t.result_schema, task_id).validate(data)
            t.status, t.result, t.result_data = "completed", result, data
            return f"completed {task_id}"

        @tool
        def sendMessage(to: str, content: str) -> str:
            """Send a message."""
            if to not in self.members:
                raise ValueError(f"unknown member {to}")
            self.messages.append((me, to, content))
            return "sent"

        return [claimTask, completeTask, sendMessage]

    async def run_member(self, name: str) -> Msg:
        prompt = (SPECS / f"{self.members[name]}.md").read_text().split("---", 2)[2]
        kit = Toolkit([*filesystem_tools(), *self.member_tools(name)])
        agent = ReActAgent(name, self.model, prompt, kit)
        state = self.states.setdefault(name, AgentState(session_id=name))
        inbox = [Msg(role="user", name=s, content=c) for s, to, c in self.messages if to == name]
        return await agent.reply(
            [Msg(role="user", name="team", content="Work."), *inbox], state, self._opts(name)
        )

    async def run_lead(self, prompt: str, instruction: str) -> Msg:
        kit = Toolkit([*filesystem_tools(), *self.lead_tools()])
        agent = ReActAgent("lead", self.model, prompt, kit)
        return await agent.reply(instruction, AgentState(session_id="lead"), self._opts("lead"))

    def _opts(self, name: str) -> ReplyOptions:
        env = ToolEnv(
            workspace=self.workspace, ctx=RuntimeContext(session_id=name), agent_name=name
        )
        return ReplyOptions(env=env)
