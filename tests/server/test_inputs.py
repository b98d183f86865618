"""Query integers are parsed only when they can fit their bound (issue 22, the class of finding 5:
no input costs more than its size, and a bad one is refused naming the parameter)."""

from __future__ import annotations

import httpx

from .harness import Served
from .test_api import Api, make_team


def test_a_query_integer_that_cannot_fit_is_refused_by_name(
    served: Served, http: httpx.Client
) -> None:
    op = Api(http, served.tokens["alice"])
    team_id, _ = make_team(op)
    inbox = f"/api/teams/{team_id}/inbox/w1"
    assert op.ok("GET", inbox, params={"after": "0", "limit": "10"}) == []  # the control
    for name, bad in [("after", "9" * 5000), ("after", "\u00b2"), ("limit", "1" * 40)]:
        r = op("GET", inbox, params={name: bad})
        assert r.status_code == 422, r.text
        assert f"query parameter {name!r} must be an integer" in r.json()["error"]["message"]
