"""Acting: the tool calls of one reasoning step, from permission decisions to results in context.

Concurrency-safe calls in a row run in parallel, the others alone and in order; results enter the
context in call order, including those that finished before a cancellation.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING

import anyio

from .. import tracing
from ..events import AgentEvent, ConfirmResult, HintEvent, ToolCallEvent, ToolResultEvent
from ..hooks import HookOutcome, claude_mode, tool_payload
from ..message import ToolResultBlock, ToolUseBlock
from ..sandbox.denials import PermissionCause, refused_command, result_data
from ..state import AgentState
from ..tools import Tool, use_tool_env
from ..tools.claude_code import from_claude_input
from ..tools.permissions import PermissionDecision, is_command_tool
from . import hitl
from .failures import AfterToolBlock, RefusalKind, refusal_data
from .verifier import hook_verifier

if TYPE_CHECKING:
    from .react import ReActAgent, ReplyOptions

#: A step's tool calls decided: the calls whose results it reports, in call order; those to run;
#: the results of those decided without running (denied, rejected).
ToolRun = tuple[list[ToolUseBlock], list[ToolUseBlock], dict[str, ToolResultBlock]]


_NO_ENV = nullcontext()

HOOK_HINT = "[hook] "
"""How the hint of a hook's notice (a ``systemMessage``, a failed hook, a stop) begins."""


class StepRunner:
    """Runs tool calls for one reply of ``agent`` on ``state``."""

    __slots__ = (
        "agent", "cfg", "halted", "notices", "opts", "paused", "pre_context", "state", "toolkit",
    )  # fmt: skip

    def __init__(self, agent: ReActAgent, state: AgentState, options: ReplyOptions) -> None:
        self.agent = agent
        self.state = state
        self.opts = options
        self.toolkit = options.toolkit if options.toolkit is not None else agent.toolkit
        self.cfg = agent.config
        self.paused = False
        #: Set when a hook answered ``continue: false``: the reply ends with this reason.
        self.halted: str | None = None
        #: Hooks' ``systemMessage`` warnings and failures not yet shown (:meth:`hints`).
        self.notices: list[str] = []
        #: PreToolUse ``additionalContext`` by call id: added to the call's result for the model.
        self.pre_context: dict[str, str] = {}

    def _ev(self) -> dict[str, str]:
        return {"reply_id": self.state.reply_id, "agent": self.agent.name}

    def hints(self) -> list[HintEvent]:
        """The hook notices gathered since the last call, as events for whoever watches the
        reply (Claude Code shows them to the user, not to the model)."""
        shown = [HintEvent(text=HOOK_HINT + n, **self._ev()) for n in self.notices]
        self.notices.clear()
        return shown

    def confirmed(self, decisions: Sequence[tuple[ToolUseBlock, ConfirmResult]]) -> ToolRun:
        """What the paused step runs now: its confirmed calls; rejected ones get an error result
        (their events come from :meth:`_run_tools`)."""
        run: list[ToolUseBlock] = []
        results: dict[str, ToolResultBlock] = {}
        for call, answer in decisions:
            tool = self.toolkit.get(call.name)
            if tool is not None and tool.asks_user:
                results[call.id] = hitl.answered(call, answer)
                continue
            if not answer.confirmed:
                results[call.id] = ToolResultBlock(
                    tool_use_id=call.id, name=call.name, output=hitl.REJECTED, is_error=True
                )
                continue
            run.append(call)
            if answer.remember and tool is not None:
                ws = self.opts.env.workspace if self.opts.env else None
                rule = self.agent.permissions.remember_rule(tool, call.input, workspace=ws)
                if rule not in self.state.permission_context.rules:
                    self.state.permission_context.rules.append(rule)
        return [c for c, _ in decisions], run, results

    async def decide(self, calls: list[ToolUseBlock]) -> ToolRun:
        """Decide each call (deny / defer / ask / run): what :meth:`_run_tools` runs and reports
        (denied ones' results); the deferred stop the reply (:meth:`_hold`), the asked pause it."""
        results: dict[str, ToolResultBlock] = {}
        to_run, to_ask, to_defer = [], [], []
        ws = self.opts.env.workspace if self.opts.env else None
        for call in calls:
            if self.halted is not None:  # a hook stopped the agent: no further call runs
                results[call.id] = _refused(call, _stopped(self.halted), "hook_block")
                continue
            tool = self.toolkit.get(call.name)
            if tool is None:
                to_run.append(call)  # the toolkit answers with an "unknown tool" error result
                continue
            pre = await self.hook("PreToolUse", **self._tool_fields(call))
            # continue: false wins over its decision fields (Claude Code)
            if self.halted is not None:
                tracing.denial("hook", call.name)
                results[call.id] = _refused(call, _stopped(self.halted), "hook_block")
                continue
            if pre.permission == "defer" and not pre.blocked:  # its input and context ignored
                to_defer.append(call)
                self.state.deferred_reasons[call.id] = pre.permission_reason  # kept by _hold
                continue
            if pre.updated_input is not None:
                call = self._rewrite(call, pre.updated_input)
            if pre.additional_context:
                self.pre_context[call.id] = pre.additional_context
            if pre.blocked or pre.permission == "deny":
                reason = pre.reason or pre.permission_reason or "refused by a PreToolUse hook"
                reason = _noted(reason, [self.pre_context.pop(call.id, "")])
                tracing.denial("hook", call.name)
                results[call.id] = _refused(call, reason, "hook_block")
                continue
            decision = self.agent.permissions.check(
                tool, call.input, self.state.permission_context, workspace=ws
            )
            decision = _with_hook(decision, pre, tool)
            mode = self.agent.permissions.effective_mode(self.state.permission_context)
            # a hook's ask with nobody to ask is refused as an ask rule's is
            decision = self.agent.permissions.never_ask(decision, mode, tool)
            if decision.behavior == "ask":
                decision = await self._permission_request(tool, call, decision)
            if self.halted is not None:  # a PermissionRequest hook's continue: false
                results[call.id] = _refused(call, _stopped(self.halted), "hook_block")
            elif decision.behavior == "deny":
                tracing.denial("permission", call.name)
                results[call.id] = _denied(call, tool, decision, mode)
            elif decision.behavior == "ask":
                to_ask.append(call)
            else:
                to_run.append(call)
        to_ask = self._hold(to_defer, to_ask, results)
        if to_ask:
            self.paused = True
            self.state.awaiting_confirmation = [c.id for c in to_ask]
        waiting = {c.id for c in [*to_ask, *to_defer]} - set(results)
        current = {c.id: c for c in [*to_run, *to_ask]}
        decided = [current.get(c.id, c) for c in calls if c.id not in waiting]
        return decided, to_run, results

    def _hold(
        self,
        deferred: list[ToolUseBlock],
        asked: list[ToolUseBlock],
        results: dict[str, ToolResultBlock],
    ) -> list[ToolUseBlock]:
        """Keep the calls a PreToolUse hook deferred pending (no result) in
        ``state.deferred_tool_calls``, with the hooks' reasons :meth:`decide` noted (those given):
        the reply stops after the step's other calls. The step's asked calls wait with them
        (decided again on resume, then asked), so a resume has one thing to do; the asked calls
        that still pause the reply are returned. A ``continue: false`` wins: the deferred calls
        then get its result instead."""
        why, self.state.deferred_reasons = self.state.deferred_reasons, {}
        if not deferred:
            return asked
        if self.halted is not None:
            for call in deferred:
                results[call.id] = _refused(call, _stopped(self.halted), "hook_block")
            return asked
        held = [*deferred, *asked]
        self.state.deferred_tool_calls = [c.id for c in held]
        self.state.deferred_reasons = {c.id: why[c.id] for c in deferred if why.get(c.id)}
        return []

    async def _run_tools(
        self,
        calls: list[ToolUseBlock],
        to_run: list[ToolUseBlock],
        results: dict[str, ToolResultBlock],
    ) -> AsyncIterator[AgentEvent]:
        """Run ``to_run``; the results of ``calls`` enter the context in call order, including
        those that finished before a cancellation (the rest are closed by the caller)."""
        try:
            for call in calls:
                yield ToolCallEvent(tool_call=call, **self._ev())
            for call in calls:
                if call.id in results:  # decided without running: denied or rejected
                    yield ToolResultEvent(result=results[call.id], **self._ev())
            for hint in self.hints():
                yield hint
            for batch in self._batches(to_run):
                await self._run_batch(batch, results)
                for call in batch:
                    yield ToolResultEvent(result=results[call.id], **self._ev())
                for hint in self.hints():
                    yield hint
        finally:
            self._append_results(calls, results)

    async def _run_batch(
        self, batch: list[ToolUseBlock], results: dict[str, ToolResultBlock]
    ) -> None:
        env_cm = use_tool_env(self.opts.env) if self.opts.env is not None else _NO_ENV
        with env_cm:
            if len(batch) == 1:  # awaited inline (no task group): the common case
                await self._run_one(batch[0], results)
                return
            async with anyio.create_task_group() as tg:
                for call in batch:
                    tg.start_soon(self._run_one, call, results)

    async def _run_one(self, call: ToolUseBlock, results: dict[str, ToolResultBlock]) -> None:
        """Run one call inside its ``execute_tool`` span; its result goes in ``results``."""
        with tracing.execute_tool(call.name, call.id, call.input) as span:
            result = results[call.id] = await self.toolkit.execute(call)
            span.result(result.is_error, result.output)
        if self.opts.hooks:
            before = self.pre_context.pop(call.id, "")
            results[call.id] = await self._post_tool(call, result, before)

    # -- hooks ------------------------------------------------------------------------------------

    async def hook(self, event: str, **fields: object) -> HookOutcome:
        """Run the hooks of ``event`` with the common fields and ``fields`` (nothing without
        hooks; prompt and agent hooks that name no model ask this agent's, an agent hook's verifier
        reads this reply's workspace, mcp_tool hooks call this agent's MCP servers); a ``continue:
        false`` answer halts the reply."""
        hooks = self.opts.hooks
        if not hooks:
            return HookOutcome()
        mode = self.agent.permissions.effective_mode(self.state.permission_context)
        payload: dict[str, object] = {
            "session_id": self.state.session_id,
            "cwd": str(self.opts.env.workspace) if self.opts.env else str(hooks.project_dir),
            "permission_mode": claude_mode(mode),
            **self.opts.hook_fields,
            **fields,
        }
        verifier = hook_verifier(self.opts.env, hooks.project_dir, self.agent.permissions)
        outcome = await hooks.fire(
            event,
            payload,
            model=self.agent.model,
            agent_runner=verifier,
            servers=self.opts.hook_servers,
        )
        self.notices += outcome.notices
        if outcome.stop:
            self.halted = outcome.stop_reason or f"stopped by a {event} hook"
        return outcome

    def _tool_fields(self, call: ToolUseBlock) -> dict[str, object]:
        ws = self.opts.env.workspace if self.opts.env else None
        tool = self.toolkit.get(call.name)
        fields = tool_payload(call.name, call.input, ws, tool, self.toolkit.tools)
        return {**fields, "tool_use_id": call.id}

    def _rewrite(self, call: ToolUseBlock, claude_input: dict[str, object]) -> ToolUseBlock:
        """``call`` with a hook's ``updatedInput`` (mapped back to our field names); the call in
        the context is replaced too, so a paused call resumes with what the hook wrote. The tool
        validates the new input when it runs."""
        new = call.model_copy(update={"input": from_claude_input(call.name, claude_input)})
        for msg in reversed(self.state.context):
            if msg.role == "assistant" and isinstance(msg.content, list):
                for i, block in enumerate(msg.content):
                    if isinstance(block, ToolUseBlock) and block.id == call.id:
                        msg.content[i] = new
                        return new
        return new

    async def _permission_request(
        self, tool: Tool, call: ToolUseBlock, decision: PermissionDecision
    ) -> PermissionDecision:
        """A call about to ask the user: PermissionRequest hooks may allow or deny it instead."""
        if tool.asks_user:
            return decision
        answer = await self.hook("PermissionRequest", **self._tool_fields(call))
        if answer.permission == "allow":
            return PermissionDecision("allow", "allowed by a PermissionRequest hook")
        if answer.permission == "deny" or answer.blocked:  # exit 2 denies, as in Claude Code
            reason = (
                answer.permission_reason or answer.reason or "denied by a PermissionRequest hook"
            )
            return PermissionDecision("deny", reason)
        return decision

    async def _post_tool(
        self, call: ToolUseBlock, result: ToolResultBlock, before: str = ""
    ) -> ToolResultBlock:
        """PostToolUse (PostToolUseFailure for an error result): a block reason or additional
        context is added to the result the model reads, after ``before`` (PreToolUse's)."""
        response: dict[str, object] = {"output": result.output}
        if result.data is not None:
            response["data"] = result.data
        fields = self._tool_fields(call)
        if result.is_error:
            post = await self.hook("PostToolUseFailure", **fields, error=result.output)
        else:
            post = await self.hook("PostToolUse", **fields, tool_response=response)
        notes = [
            n for n in (before, post.reason if post.blocked else "", post.additional_context) if n
        ]
        if not notes and not post.blocked:
            return result
        update: dict[str, object] = {"output": _noted(result.output, notes)}
        if post.blocked:  # the tool has run: the dashboard lists the block (agent.failures)
            event = "PostToolUseFailure" if result.is_error else "PostToolUse"
            block = AfterToolBlock(event=event, hooks=post.blocked_by, reason=post.reason)
            update["data"] = block.into(result.data)
        return result.model_copy(update=update)

    def _batches(self, calls: list[ToolUseBlock]) -> list[list[ToolUseBlock]]:
        """Consecutive concurrency-safe calls form one parallel batch; others run alone, in order."""
        batches: list[list[ToolUseBlock]] = []
        for call in calls:
            if self._safe(call) and batches and self._safe(batches[-1][0]):
                batches[-1].append(call)
            else:
                batches.append([call])
        return batches

    def _safe(self, call: ToolUseBlock) -> bool:
        tool = self.toolkit.get(call.name)
        return self.cfg.parallel_tools and tool is not None and tool.concurrency_safe

    def _append_results(
        self, calls: list[ToolUseBlock], results: dict[str, ToolResultBlock]
    ) -> None:
        ordered = [results[c.id] for c in calls if c.id in results]
        if ordered:
            self.state.context.append(hitl.tool_results_msg(ordered))


def _with_hook(decision: PermissionDecision, pre: HookOutcome, tool: Tool) -> PermissionDecision:
    """The permission decision after a PreToolUse ``permissionDecision``, as Claude Code orders
    them: ``allow`` skips the prompt but not a deny or ask rule; ``ask`` prompts even for a call
    the rules allow."""
    prompt_only = decision.behavior == "ask" and decision.rule is None and not tool.asks_user
    if pre.permission == "allow" and prompt_only:
        return PermissionDecision("allow", pre.permission_reason or "allowed by a hook")
    if pre.permission == "ask" and decision.behavior == "allow":
        because = f": {pre.permission_reason}" if pre.permission_reason else ""
        return PermissionDecision("ask", f"a PreToolUse hook asks{because}")
    return decision


def _denied(
    call: ToolUseBlock, tool: Tool, decision: PermissionDecision, mode: str
) -> ToolResultBlock:
    """The error result of a call the permission engine refused; a shell command's refusal is a
    sandbox denial (:mod:`agentscope_teams.sandbox.denials`: recorded there, once)."""
    if not is_command_tool(tool):
        return _refused(call, decision.reason, "permission_denied")
    denial = refused_command(_command_cause(tool, decision, mode), decision.reason)
    return ToolResultBlock(
        tool_use_id=call.id,
        name=call.name,
        output=decision.reason,
        is_error=True,
        data=result_data(denial),
    )


def _command_cause(tool: Tool, decision: PermissionDecision, mode: str) -> PermissionCause:
    """What refused a shell command: a deny rule, plan mode, dontAsk or a PermissionRequest hook."""
    if decision.rule is not None and decision.rule.behavior == "deny":
        return "rule"
    if mode == "plan" and not tool.read_only:
        return "plan_mode"
    return "dont_ask" if mode == "dont_ask" else "hook"


def _stopped(reason: str) -> str:
    """The result of a call a hook's ``continue: false`` kept from running."""
    return f"not run: a hook stopped the agent ({reason})"


def _noted(text: str, notes: list[str]) -> str:
    """``text`` with hooks' ``notes`` (reasons, additional context) after it, for the model."""
    return "\n\n".join([text, *(f"[hook] {n}" for n in notes if n)])


def _refused(call: ToolUseBlock, reason: str, kind: RefusalKind) -> ToolResultBlock:
    """The error result of a call refused before it ran, its kind in ``data``."""
    return ToolResultBlock(
        tool_use_id=call.id, name=call.name, output=reason, is_error=True, data=refusal_data(kind)
    )
