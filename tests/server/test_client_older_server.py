"""A lead of this release spawning a member through a control plane of the previous release: the
client sends only the fields it sets, so an older server (whose request bodies refuse unknown
fields, as ours do) accepts a spawn that uses none of the newer ones, and still refuses one that
needs a field it cannot honour (the member's inherited mode)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from pydantic import ValidationError, create_model

from agentscope_teams.server import ControlPlaneTeamClient
from agentscope_teams.server import schemas as s
from agentscope_teams.teams import Member

pytestmark = pytest.mark.anyio

#: The previous release's spawn body: the same fields without ``lead_mode``, unknown ones refused.
_OLD_FIELDS: dict[str, Any] = {
    name: (f.annotation, f) for name, f in s.SpawnMember.model_fields.items() if name != "lead_mode"
}
OldSpawnMember = create_model("OldSpawnMember", __base__=s._Input, **_OLD_FIELDS)


def _older_server(request: httpx.Request) -> httpx.Response:
    try:
        body = OldSpawnMember.model_validate(json.loads(request.content))
    except ValidationError as exc:
        return httpx.Response(422, json={"detail": exc.errors(include_url=False)})
    member = Member(name=body.name, spec=body.spec)  # type: ignore[attr-defined]
    return httpx.Response(201, json={"member": member.model_dump(mode="json"), "token": "t"})


async def test_a_spawn_without_newer_fields_is_accepted_by_an_older_server() -> None:
    http = httpx.AsyncClient(transport=httpx.MockTransport(_older_server))
    async with ControlPlaneTeamClient("http://cp.test", "op", http=http) as client:
        member = await client.spawn_member("t1", "w1", "coder", permission_mode="plan")
        assert member.name == "w1"
        with pytest.raises(ValueError, match="422"):  # lead_mode set: refused, not lost silently
            await client.spawn_member("t1", "w2", "coder", lead_mode="plan")
    await http.aclose()
