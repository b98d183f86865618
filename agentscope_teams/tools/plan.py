"""The session's plan: its task list (``todo_write``), plan mode, and questions for the user.

Claude Code's ``TodoWrite``, ``TodoRead``, ``EnterPlanMode``, ``ExitPlanMode`` and
``AskUserQuestion``, over the session's :class:`~agentscope_teams.state.AgentState`, which the agent
gives its tools in ``ToolEnv.extras["state"]`` and saves after the step (so the list survives a
crash and is read back by any process):

- ``todo_write`` replaces the whole list (items with ``content``, ``status``, ``activeForm``);
- ``enter_plan_mode`` switches the session to plan mode (read-only);
- ``exit_plan_mode`` presents the plan and pauses for the user's approval (it requires
  confirmation, in plan mode too); approved, the session leaves plan mode;
- ``ask_user_question`` always pauses: the user's answers (``ConfirmResult.answers``) are its
  result. A subagent has no user to ask: its parent gets the pause as an error.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ToolError
from ..state import AgentState, PlanTask
from .base import Tool, ToolEnv
from .decorator import make_tool
from .output import ToolOutput

__all__ = [
    "PLAN_TOOLS",
    "Todo",
    "TodoList",
    "answers_text",
    "plan_tools",
    "render_todos",
    "session_state",
]

MAX_TODOS = 100
_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]"}


def session_state(env: ToolEnv) -> AgentState:
    """The state of the session a tool runs in; a tool error outside an agent's call."""
    state = env.extras.get("state")
    if not isinstance(state, AgentState):
        raise ToolError("this tool works only inside an agent's call (no session state here)")
    return state


class Todo(BaseModel):
    """One item of :func:`todo_write`, in Claude Code's shape."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    content: Annotated[str, Field(min_length=1, max_length=500)]
    status: Literal["pending", "in_progress", "completed"]
    active_form: Annotated[str, Field(max_length=500, alias="activeForm")] = ""
    id: Annotated[str | None, Field(max_length=64)] = None


def render_todos(tasks: list[PlanTask]) -> str:
    """The task list as the model and a person read it."""
    if not tasks:
        return "The task list is empty."
    lines = [f"{_MARK[t.status]} {t.title}" for t in tasks]
    doing = next((t for t in tasks if t.status == "in_progress"), None)
    if doing is not None and doing.active_form:
        lines.append(f"Now: {doing.active_form}")
    done = sum(t.status == "completed" for t in tasks)
    return f"Task list ({done}/{len(tasks)} done):\n" + "\n".join(lines)


class TodoList(ToolOutput):
    """What ``todo_write`` and ``todo_read`` return: the list (``data()["tasks"]`` for code)."""

    tasks: list[PlanTask]

    def render(self) -> str:
        return render_todos(self.tasks)


async def todo_write(
    todos: Annotated[list[Todo], Field(max_length=MAX_TODOS)], *, env: ToolEnv
) -> TodoList:
    """Write the session's task list (replacing it whole) to plan and track multi-step work.

    Keep one task in_progress while you work on it; mark it completed as soon as it is done.

    Args:
        todos: Every task, in order: content (what to do), status (pending, in_progress or
            completed) and activeForm (how it reads while in progress, e.g. "Running the tests").
    """
    state = session_state(env)
    old = {t.id: t for t in state.tasks_context.tasks}
    tasks = []
    for todo in todos:
        kept = old.get(todo.id) if todo.id else None
        fields = {"title": todo.content, "status": todo.status, "active_form": todo.active_form}
        tasks.append(kept.model_copy(update=fields) if kept else PlanTask(**fields))
    state.tasks_context.tasks = tasks
    return TodoList(tasks=tasks)


async def todo_read(*, env: ToolEnv) -> TodoList:
    """Read the session's task list."""
    return TodoList(tasks=list(session_state(env).tasks_context.tasks))


async def enter_plan_mode(*, env: ToolEnv) -> str:
    """Switch to plan mode: explore with read-only tools and plan before changing anything."""
    context = session_state(env).permission_context
    context.mode, context.mode_chosen = "plan", True
    return "Plan mode is on: only read-only tools run. Present your plan with exit_plan_mode."


async def exit_plan_mode(plan: Annotated[str, Field(min_length=1)], *, env: ToolEnv) -> str:
    """Present your plan to the user for approval; once approved, plan mode ends.

    Args:
        plan: The plan, concise, in Markdown.
    """
    context = session_state(env).permission_context
    agent = env.extras.get("agent")
    engine = getattr(agent, "permissions", None)
    mode = engine.effective_mode(context) if engine is not None else context.mode
    if mode != "plan":
        return "The user approved the plan (the session was not in plan mode). Carry it out."
    context.mode, context.mode_chosen = "default", True
    return "The user approved the plan. Plan mode is off: carry it out."


class Option(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: Annotated[str, Field(min_length=1, max_length=200)]
    description: Annotated[str, Field(max_length=1000)] = ""


class Question(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    question: Annotated[str, Field(min_length=1, max_length=2000)]
    header: Annotated[str, Field(max_length=100)] = ""
    options: Annotated[list[Option], Field(max_length=10)] = Field(default_factory=list)
    multi_select: Annotated[bool, Field(alias="multiSelect")] = False


async def ask_user_question(
    questions: Annotated[list[Question], Field(min_length=1, max_length=4)],
) -> str:
    """Ask the user questions (with options to choose from) and wait for the answers.

    Args:
        questions: One to four questions; each has the question, a short header, options (label
            and description) and multiSelect.
    """
    raise ToolError(
        "ask_user_question needs a person to answer and none is attached to this call; decide "
        "yourself and say which assumption you made"
    )


def answers_text(answers: dict[str, str]) -> str:
    """The result an ``ask_user_question`` call gets from the user's answers."""
    if not answers:
        return "The user gave no answer."
    return "The user answered:\n" + "\n".join(f"- {q}: {a}" for q, a in answers.items())


def plan_tools() -> list[Tool]:
    """Fresh copies of the five plan tools (each agent's own, as :func:`filesystem_tools`)."""
    return [dataclasses.replace(t, parameters=copy.deepcopy(t.parameters)) for t in PLAN_TOOLS]


PLAN_TOOLS: tuple[Tool, ...] = (
    make_tool(todo_write),
    make_tool(todo_read, read_only=True),
    make_tool(enter_plan_mode, read_only=True),
    make_tool(exit_plan_mode, read_only=True, requires_confirmation=True),
    make_tool(ask_user_question, read_only=True, asks_user=True),
)
