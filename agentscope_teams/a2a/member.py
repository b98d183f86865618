"""A remote A2A agent as a team member: a model that works the board for it.

A member is one of our agents run by the team runtime; its model decides which team tools to call.
For a remote agent that model is :class:`RemoteMemberModel`, which decides from the request alone
(no hidden state, so any process can continue): after a wake-up or a teammate's message it calls
``claimTask``; with a claimed task it sends its title and description to the remote agent, calls
``completeTask`` with the answer (``failTask`` with the reason when the remote agent fails, or
when it asks for input: a board task has nobody to answer, so the waiting remote task is
cancelled); after a report it claims again, and
when nothing is claimable it ends the call. The tool names and the claim result's fields are the
member tools of :mod:`agentscope_teams.teams.tools` (a test drives the real ones).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ..context import current_context
from ..errors import ModelError
from ..message import Msg, TextBlock, ToolResultBlock, ToolUseBlock, new_id
from ..model.base import ModelRequest, ModelResponse, StreamItem
from ..model.scripted import replay
from .remote import RemoteA2AModel

CLAIM, COMPLETE, FAIL = "claimTask", "completeTask", "failTask"


class RemoteMemberModel:
    """The model of a team member whose work the remote agent ``remote`` does."""

    def __init__(self, remote: RemoteA2AModel) -> None:
        self.remote = remote

    @property
    def model_name(self) -> str:
        return f"a2a-member:{self.remote.name}"

    async def generate(self, request: ModelRequest) -> ModelResponse:
        result = _last_result(request.messages)
        if result is None or result.name in (COMPLETE, FAIL):
            return _call(CLAIM, {})
        if result.name != CLAIM:
            return _text("")
        data = result.data or {}
        task = data.get("task")
        if result.is_error or not isinstance(task, dict):
            return _text(result.output if result.is_error else "Nothing to claim.")
        parts = [str(task.get("title") or ""), str(data.get("description") or "")]
        return await self._work(str(task["id"]), "\n\n".join(p for p in parts if p))

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        for item in replay(await self.generate(request)):
            yield item

    async def _work(self, task_id: str, text: str) -> ModelResponse:
        try:
            reply = await self.remote.ask(current_context(), text, answers=False)
        except ModelError as exc:
            return _call(FAIL, {"task_id": task_id, "error": str(exc)})
        if reply.waiting:  # nobody will answer: cancel the remote task rather than leave it
            await self.remote.abandon(current_context())
            error = (
                f"the remote agent {self.remote.name!r} asked for input a board task cannot "
                f"give: {reply.text}"
            )
            return _call(FAIL, {"task_id": task_id, "error": error})
        return _call(COMPLETE, {"task_id": task_id, "result": reply.text})


def _last_result(messages: list[Msg]) -> ToolResultBlock | None:
    if not messages:
        return None
    found = [b for b in messages[-1].content if isinstance(b, ToolResultBlock)]
    return found[0] if found else None


def _call(name: str, arguments: dict[str, Any]) -> ModelResponse:
    call = ToolUseBlock(id=new_id("call_"), name=name, input=arguments)
    return ModelResponse(content=[call], stop_reason="tool_use")


def _text(text: str) -> ModelResponse:
    return ModelResponse(content=[TextBlock(text=text)] if text else [], stop_reason="end_turn")
