"""Structured output inside one reply: what the model is offered, and judging each answer.

``native`` mode sends the output's schema as the request's ``response_schema`` and reads the
answer's text as JSON. ``tool`` mode offers a ``final_result`` tool whose arguments are the output
(a text answer that happens to be valid JSON for the schema is accepted too). The mode is the
model's ``structured_output`` attribute (``tool`` when it has none).

An answer that does not validate goes back to the model, with every problem and its field path,
as the error result of its ``final_result`` call or as a message; after
``ReActConfig.output_retries`` rejected answers the reply raises
:class:`~agentscope_teams.errors.OutputRetriesExceededError`.

The reply's output is persisted in the state (:class:`OutputState`: JSON schema, mode, rejected
answers) while it runs, so a reply paused for a confirmation and resumed in another process
checks the same schema: resumed with a type, that type's JSON schema must equal the stored one
(else :class:`~agentscope_teams.errors.OutputTypeMismatchError`, before anything changes); resumed
without one, the stored schema validates and the output is JSON data.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field

from ..errors import (
    OutputRetriesExceededError,
    OutputTypeMismatchError,
    OutputValidationError,
    bulleted,
)
from ..message import ToolResultBlock, ToolUseBlock
from ..model.base import (
    FINAL_RESULT_TOOL,
    ModelResponse,
    ResponseSchema,
    StructuredOutputMode,
    ToolSchema,
)
from ..model.response_parsing import RAW_ARGUMENTS_KEY
from ..state import AgentState, ExtensionState
from .output import OutputType

ACCEPTED = "Final result accepted."
NOT_RUN = "not run: the reply ended with the final result"


class OutputState(ExtensionState):
    """The output of the reply in progress, saved with the state (removed when the reply ends)."""

    KEY: ClassVar[str] = "structured_output"
    reply_id: str = ""
    name: str = "output"
    json_schema: dict[str, Any] = Field(default_factory=dict)
    mode: StructuredOutputMode = "tool"
    #: Answers rejected so far in this reply.
    failures: int = 0

    @classmethod
    def drop(cls, state: AgentState) -> None:
        state.middle_context.pop(cls.KEY, None)


@dataclass
class Verdict:
    """What to do with one answer: accepted (``value``, ``data``) or rejected (``problems``).

    ``results`` answer the response's tool calls; ``feedback`` is a message for the model when no
    ``final_result`` call carries the problems.
    """

    accepted: bool
    value: Any = None
    data: Any = None
    problems: list[str] = field(default_factory=list)
    results: list[ToolResultBlock] = field(default_factory=list)
    feedback: str | None = None


def model_mode(model: object) -> StructuredOutputMode:
    """The structured-output mode a model asks for (``tool`` unless it says ``native``)."""
    return "native" if getattr(model, "structured_output", "tool") == "native" else "tool"


class OutputRun:
    """The structured output of one reply; see the module docs."""

    def __init__(self, output: OutputType, record: OutputState, retries: int) -> None:
        self.output, self.record, self.retries = output, record, retries

    @property
    def mode(self) -> StructuredOutputMode:
        return self.record.mode

    @classmethod
    def start(
        cls, output: OutputType, mode: StructuredOutputMode, state: AgentState, retries: int
    ) -> OutputRun:
        """A new reply (``state.reply_id`` set) returning ``output``; recorded in the state."""
        record = OutputState(
            reply_id=state.reply_id, name=output.name, json_schema=output.json_schema, mode=mode
        )
        state.middle_context[OutputState.KEY] = record
        return cls(output, record, retries)

    @classmethod
    def resume(cls, given: OutputType | None, state: AgentState, retries: int) -> OutputRun | None:
        """The output of the paused reply in ``state``, checked against ``given``; changes nothing."""
        if OutputState.KEY not in state.middle_context:
            return None
        record = OutputState.peek(state)
        if record.reply_id != state.reply_id:
            return None
        if given is not None and not given.same_schema(record.json_schema):
            raise OutputTypeMismatchError(record.name, given.name, state.reply_id)
        output = given or OutputType.from_schema(record.json_schema, record.name)
        return cls(output, record, retries)

    # -- the request -----------------------------------------------------------------------------

    def shape(
        self, tools: list[ToolSchema], final: bool
    ) -> tuple[list[ToolSchema], ResponseSchema | None]:
        """The tools and response schema of a request (``final``: the last allowed step)."""
        if self.mode == "native":
            return ([] if final else tools), self.output.response_schema()
        return ([] if final else tools) + [self.output.tool_schema()], None

    def final_hint(self) -> str:
        if self.mode == "native":
            return f"Do not call tools; give your final answer now as JSON matching {self.output.name}."
        return f"Give your final answer now by calling {FINAL_RESULT_TOOL}."

    # -- judging an answer -----------------------------------------------------------------------

    async def judge(self, response: ModelResponse, final: bool) -> Verdict | None:
        """The verdict on ``response``, or None when it only calls ordinary tools (run them). An
        output checked against a JSON schema is judged in a worker thread, off the event loop
        (the check is bounded by :mod:`~agentscope_teams.schema_guard`); a typed one in place."""
        if self.output.python_type is not None:
            return self._judge(response, final)
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self._judge, response, final)

    def _judge(self, response: ModelResponse, final: bool) -> Verdict | None:
        calls = response.tool_calls
        answers = [c for c in calls if c.name == FINAL_RESULT_TOOL and self.mode == "tool"]
        if answers:
            return self._judge_call(answers[0], calls)
        if calls and not final:
            return None
        if calls:  # the last step offers no ordinary tool
            closing = [_error(c, "not run: no tools are available at the last step") for c in calls]
        else:
            closing = []
        try:
            value = self.output.validate_text(response.text)
        except OutputValidationError as exc:
            return Verdict(False, problems=exc.problems, results=closing, feedback=self._ask(exc))
        return Verdict(True, value, self.output.dump(value), results=closing)

    def _judge_call(self, answer: ToolUseBlock, calls: list[ToolUseBlock]) -> Verdict:
        others = [c for c in calls if c.id != answer.id]
        try:
            if RAW_ARGUMENTS_KEY in answer.input:
                raw = str(answer.input[RAW_ARGUMENTS_KEY])[:80]
                raise OutputValidationError(
                    self.output.name, [f"(arguments): not valid JSON: {raw!r}"]
                )
            value = self.output.validate_arguments(answer.input)
        except OutputValidationError as exc:
            again = f"not run: call it again after {FINAL_RESULT_TOOL} is accepted"
            results = [_error(answer, self._tell(exc)), *(_error(c, again) for c in others)]
            return Verdict(False, problems=exc.problems, results=results)
        ok = ToolResultBlock(tool_use_id=answer.id, name=answer.name, output=ACCEPTED)
        return Verdict(
            True,
            value,
            self.output.dump(value),
            results=[ok, *(_error(c, NOT_RUN) for c in others)],
        )

    def rejected(self, verdict: Verdict, reply_id: str) -> None:
        """Count a rejected answer; raise once more than ``retries`` were rejected."""
        self.record.failures += 1
        if self.record.failures > self.retries:
            raise OutputRetriesExceededError(
                self.output.name, self.record.failures, verdict.problems, reply_id
            )

    def _tell(self, exc: OutputValidationError) -> str:
        how = f"Call {FINAL_RESULT_TOOL} again with corrected arguments"
        return self._problems("The final result", exc, how)

    def _ask(self, exc: OutputValidationError) -> str:
        how = (
            f"Call {FINAL_RESULT_TOOL} with your final answer"
            if self.mode == "tool"
            else f"Answer again with only JSON matching {self.output.name}"
        )
        return self._problems("Your answer", exc, how)

    def _problems(self, subject: str, exc: OutputValidationError, how: str) -> str:
        """What the model is told of a rejected answer: its problems, then what to do."""
        left = self.retries - self.record.failures
        return (
            f"{subject} is not a valid {self.output.name}:\n{bulleted(exc.problems)}\n"
            f"{how} ({left} retries left)."
        )


def _error(call: ToolUseBlock, text: str) -> ToolResultBlock:
    return ToolResultBlock(tool_use_id=call.id, name=call.name, output=text, is_error=True)
