"""The OpenAPI 3.1 document of the API, generated from the same :class:`~.routing.Endpoint` list
that builds the routes (so every route is listed), with schemas from the pydantic models."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from .._version import __version__
from .events import PATH as EVENTS_PATH
from .routing import Endpoint
from .schemas import ErrorBody
from .stream_log import MAX_EVENT_ID

_REF = "#/components/schemas/{model}"
_ERRORS = {
    "401": "No token, or an unknown, revoked or expired one",
    "403": "The token may not do this (another team, another member, operator only)",
    "404": "Unknown team, task or member",
    "409": "Conflict: ClaimConflict, VersionConflict, NotTaskOwnerError, TaskStateError",
    "413": "The request body is over the size limit",
    "422": "Invalid request body (not JSON, nested too deep, wrong fields), identifier or query",
    "500": "A library error (typed) or an unexpected one (InternalError)",
    "503": "The store behind the server cannot be reached, or is busy (StoreBusyError: retry "
    "after the Retry-After seconds)",
}
DESCRIPTION = """\
The agentscope-teams control plane: the TeamClient operations over HTTP.

Every request carries `Authorization: Bearer <token>`; identity (org, user, member) comes only from
the token. Operator tokens are printed by `agentscope-teams serve`; member tokens are returned once
when a member is spawned. Errors are `{"error": {"type", "message", ...}}` (plus the error's structured fields, e.g.
`task_id`, `key`, `file`, `line`) with the status codes listed per operation."""


def _ref(model: type[BaseModel]) -> dict[str, Any]:
    return {"$ref": _REF.format(model=model.__name__)}


def _content(model: type[BaseModel], many: bool) -> dict[str, Any]:
    schema = {"type": "array", "items": _ref(model)} if many else _ref(model)
    return {"application/json": {"schema": schema}}


def _operation(ep: Endpoint) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": ep.summary,
        "operationId": ep.handler.__module__.rsplit(".", 1)[-1] + "_" + ep.handler.__name__,
        "tags": [ep.tag],
    }
    params = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in re.findall(r"{(\w+)}", ep.path)
    ]
    params += [
        {
            "name": name,
            "in": "query",
            "required": False,
            "description": desc,
            "schema": {"type": "string"},
        }
        for name, desc in ep.query
    ]
    if params:
        op["parameters"] = params
    if ep.body is not None:
        required = any(f.is_required() for f in ep.body.model_fields.values())
        op["requestBody"] = {"required": required, "content": _content(ep.body, False)}
    ok: dict[str, Any] = {"description": "OK" if ep.status != 201 else "Created"}
    if ep.response is not None:
        ok["content"] = _content(ep.response, ep.many)
    if ep.status == 204:
        ok["description"] = "No content"
    op["responses"] = {str(code): ok for code in (ep.status, *ep.also_ok)}
    op["responses"].update(
        {
            code: {"description": text, "content": _content(ErrorBody, False)}
            for code, text in _ERRORS.items()
        }
    )
    if ep.access == "operator":
        op["description"] = "Needs an operator token (403 for a member token)."
    return op


def _events_operation() -> dict[str, Any]:
    return {
        "summary": "Server-sent events of a team (task, message, member, team)",
        "operationId": "events_team_events",
        "tags": ["events"],
        "parameters": [
            {"name": "team_id", "in": "path", "required": True, "schema": {"type": "string"}},
            {
                "name": "ticket",
                "in": "query",
                "required": False,
                "schema": {"type": "string"},
                "description": "a ticket from POST .../events/ticket (for EventSource)",
            },
            {
                "name": "last_event_id",
                "in": "query",
                "required": False,
                "schema": {"type": "string", "maxLength": MAX_EVENT_ID},
                "description": "resume after this event (as the Last-Event-ID header does)",
            },
        ],
        "responses": {
            "200": {
                "description": "An endless text/event-stream",
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            },
            "400": {"description": "A Last-Event-ID this server never sent (EventIdError)"},
            **{code: {"description": _ERRORS[code]} for code in ("401", "403", "404")},
        },
    }


def openapi_document(endpoints: Sequence[Endpoint]) -> dict[str, Any]:
    inputs: set[type[BaseModel]] = set()
    outputs: set[type[BaseModel]] = {ErrorBody}
    paths: dict[str, dict[str, Any]] = {}
    for ep in endpoints:
        paths.setdefault(ep.path, {})[ep.method.lower()] = _operation(ep)
        if ep.body is not None:
            inputs.add(ep.body)
        if ep.response is not None:
            outputs.add(ep.response)
    paths[EVENTS_PATH] = {"get": _events_operation()}
    pairs: list[tuple[type[BaseModel], JsonSchemaMode]] = [
        (m, "validation") for m in sorted(inputs, key=lambda m: m.__name__)
    ]
    pairs += [(m, "serialization") for m in sorted(outputs, key=lambda m: m.__name__)]
    _, defs = models_json_schema(pairs, ref_template=_REF)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "agentscope-teams control plane",
            "version": __version__,
            "description": DESCRIPTION,
        },
        "paths": paths,
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
