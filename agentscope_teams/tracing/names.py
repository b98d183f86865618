"""Span names and attribute keys: the one place they are spelled.

``gen_ai.*`` names follow the OpenTelemetry GenAI semantic conventions (agent spans, model spans,
tool execution); ``agentscope_teams.*`` names are this framework's own.
"""

from __future__ import annotations

from typing import Final

INSTRUMENTATION: Final = "agentscope_teams"

# -- span names (the conventions: "{operation} {target}") ----------------------------------------
INVOKE_AGENT: Final = "invoke_agent"
CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"
HITL_PAUSE: Final = "agentscope_teams.hitl.pause"
HITL_RESUME: Final = "agentscope_teams.hitl.resume"

# -- span events ----------------------------------------------------------------------------------
SUBAGENT_SPAWN: Final = "agentscope_teams.subagent.spawn"
#: A run ended (once per run, with its status), the pair of ``SUBAGENT_SPAWN``.
SUBAGENT_STOP: Final = "agentscope_teams.subagent.stop"
TASK_CREATE: Final = "agentscope_teams.task.create"
TASK_CLAIM: Final = "agentscope_teams.task.claim"
TASK_FINISH: Final = "agentscope_teams.task.finish"
STORE_CONFLICT: Final = "agentscope_teams.store.version_conflict"

# -- GenAI semantic-convention attributes ----------------------------------------------------------
OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
REQUEST_MODEL: Final = "gen_ai.request.model"
RESPONSE_MODEL: Final = "gen_ai.response.model"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_RESULT: Final = "gen_ai.tool.call.result"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
ERROR_TYPE: Final = "error.type"

# -- this framework's attributes -------------------------------------------------------------------
USER_ID: Final = "agentscope_teams.user.id"
ORG_ID: Final = "agentscope_teams.org.id"
DEPTH: Final = "agentscope_teams.agent.depth"
TOOLS: Final = "agentscope_teams.hitl.tools"
CONFIRMED: Final = "agentscope_teams.hitl.confirmed"
REJECTED: Final = "agentscope_teams.hitl.rejected"
RUN_ID: Final = "agentscope_teams.subagent.run_id"
SPEC: Final = "agentscope_teams.subagent.spec"
BACKGROUND: Final = "agentscope_teams.subagent.background"
TEAM_ID: Final = "agentscope_teams.team.id"
TASK_ID: Final = "agentscope_teams.task.id"
TASK_STATUS: Final = "agentscope_teams.task.status"
MEMBER: Final = "agentscope_teams.team.member"
STORE_KEY: Final = "agentscope_teams.store.key"

#: The model's stop reason -> the conventions' finish reason.
FINISH_REASON_OF: Final = {
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "content_filter": "content_filter",
}

#: Opt-in switch for recording message contents, tool arguments and results (off by default);
#: the variable the OpenTelemetry GenAI instrumentations use.
CAPTURE_CONTENT_ENV: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
