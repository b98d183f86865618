"""One AgentScope 2.0 ``SessionRecord`` (its JSON) -> this project's session record.

What has a counterpart converts to it: messages (see :mod:`.convert_messages`), ``reply_id`` and
``cur_iter`` (also from the older top-level layout), the permission mode and rules, activated tool
groups, the file-read cache (as path -> sha256 of the cached content), tasks, the middleware
context, the config (``workspace_id`` -> ``workspace``), origin and team. What has none is kept
under ``middle_context["agentscope"]`` so nothing is lost. What would change behaviour is refused
with :class:`CannotConvert` naming it: the ``dont_ask`` permission mode, a call waiting for an
external result, a result still running, media by URL, data blocks where only text converts.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter, ValidationError

from ..errors import first_problem
from ..sessions.config import SessionConfig
from ..sessions.origins import SessionOrigin, origin_of
from ..sessions.records import SessionBody, new_body
from ..state import (
    AgentState,
    PermissionContext,
    PermissionRule,
    PlanTask,
    TasksContext,
    ToolContext,
)
from .convert_messages import CannotConvert, convert_context, text_of, timestamp

_ORIGIN: TypeAdapter[SessionOrigin] = TypeAdapter(SessionOrigin)
KEPT = "agentscope"  # middle_context key of what has no counterpart here
_MODES = {
    "default": "default",
    "accept_edits": "accept_edits",
    "explore": "plan",
    "bypass": "bypass",
}
_CONFIG_FIELDS = {
    "workspace_id",
    "name",
    "naming",
    "cwd",
    "chat_model_config",
    "fallback_chat_model_config",
    "tts_model_config",
    "realtime_model_config",
    "knowledge_config",
}


@dataclass
class Converted:
    """A converted session: its ids, the record body, and notes on what went where."""

    user_id: str
    agent_id: str
    session_id: str
    body: SessionBody
    notes: list[str] = field(default_factory=list)


def _config(raw: dict[str, Any]) -> SessionConfig:
    unknown = sorted(set(raw) - _CONFIG_FIELDS)
    if unknown:
        raise CannotConvert(f"config has fields this project does not know: {', '.join(unknown)}")
    try:
        return SessionConfig.model_validate(raw)
    except ValidationError as exc:
        raise CannotConvert(f"config does not validate: {first_problem(exc)}") from exc


def _bash_patterns(content: str) -> list[str]:
    """AgentScope's Bash rule content as glob patterns on the command."""
    if content.endswith(":*"):
        prefix = content[:-2].strip()
        return [prefix, prefix + " *"]
    if "*" in content.replace("\\*", ""):
        return [content]
    return ["*" + content + "*"]  # no wildcard: AgentScope matches a substring


def _permissions(raw: dict[str, Any], kept: dict[str, Any]) -> PermissionContext:
    mode = raw.get("mode", "default")
    if mode not in _MODES:
        raise CannotConvert(
            f"permission mode {mode!r} has no counterpart here (modes: default, accept_edits, "
            "plan, bypass); set another mode in AgentScope or after importing"
        )
    rules: list[PermissionRule] = []
    for behavior in ("deny", "ask", "allow"):
        for tool, found in (raw.get(f"{behavior}_rules") or {}).items():
            for rule in found:
                content = rule.get("rule_content")
                name = rule.get("tool_name") or tool
                patterns: list[str | None] = [content]
                if content is not None and name == "Bash":
                    patterns = list(_bash_patterns(content))
                for pattern in patterns:
                    rules.append(PermissionRule(tool=name, behavior=behavior, pattern=pattern))
    if raw.get("working_directories"):
        kept["working_directories"] = raw["working_directories"]
    return PermissionContext(mode=_MODES[mode], rules=rules)


def _tools(raw: dict[str, Any]) -> ToolContext:
    cache = {
        entry["file_path"]: hashlib.sha256("".join(entry.get("lines") or []).encode()).hexdigest()
        for entry in raw.get("read_file_cache") or []
    }
    return ToolContext(file_read_cache=cache, active_groups=list(raw.get("activated_groups") or []))


def _tasks(raw: dict[str, Any], kept: dict[str, Any]) -> TasksContext:
    tasks = raw.get("tasks") or []
    if tasks:
        kept["tasks"] = tasks  # description, owner, dependencies: no counterpart in PlanTask
    return TasksContext(
        tasks=[
            PlanTask(id=t["id"], title=t.get("subject", ""), status=t.get("state", "pending"))
            for t in tasks
        ]
    )


def convert_state(raw: dict[str, Any], session_id: str, notes: list[str]) -> AgentState:
    kept: dict[str, Any] = {}
    reply = dict(raw.get("reply_context") or {})
    for legacy in ("reply_id", "cur_iter"):  # the layout before reply_context
        if legacy in raw:
            reply.setdefault(legacy, raw[legacy])
    extra_reply = {k: v for k, v in reply.items() if k not in ("reply_id", "cur_iter") and v}
    if extra_reply:
        kept["reply_context"] = extra_reply
    context, asking = convert_context(raw.get("context") or [])
    middle = dict(raw.get("middle_context") or {})
    permissions = _permissions(raw.get("permission_context") or {}, kept)
    tasks = _tasks(raw.get("tasks_context") or {}, kept)
    if kept:
        middle[KEPT] = kept
        notes.append(f"kept without counterpart in middle_context[{KEPT!r}]: {', '.join(kept)}")
    return AgentState(
        session_id=session_id,
        summary=text_of(raw.get("summary") or "", "summary"),
        context=context,
        reply_id=str(reply.get("reply_id") or ""),
        cur_iter=int(reply.get("cur_iter") or 0),
        permission_context=permissions,
        tool_context=_tools(raw.get("tool_context") or {}),
        tasks_context=tasks,
        middle_context=middle,
        awaiting_confirmation=asking,
    )


def convert_record(raw: dict[str, Any]) -> Converted:
    """Convert one AgentScope session record (as parsed JSON); :class:`CannotConvert` says why not."""
    for name in ("id", "user_id", "agent_id"):
        if not isinstance(raw.get(name), str) or not raw[name]:
            raise CannotConvert(f"the record has no {name}")
    notes: list[str] = []
    origin = raw.get("origin")
    try:
        if origin is not None:
            found = _ORIGIN.validate_python(origin)
        else:  # the flat layout before ``origin``
            found = origin_of(
                source=raw.get("source") or "user",
                schedule_id=raw.get("source_schedule_id"),
                chat_id=raw.get("source_chat_id"),
                chat_name=raw.get("source_chat_name"),
                channel_id=raw.get("source_channel_id"),
            )
    except ValueError as exc:
        raise CannotConvert(f"origin {origin!r} does not convert: {exc}") from exc
    state = convert_state(raw.get("state") or {}, raw["id"], notes)
    body = new_body(
        _config(raw.get("config") or {}),
        state,
        found,
        raw.get("team_id"),
        created_at=timestamp(raw.get("created_at"), "created_at"),
        updated_at=timestamp(raw.get("updated_at"), "updated_at"),
    )
    return Converted(raw["user_id"], raw["agent_id"], raw["id"], body, notes)
