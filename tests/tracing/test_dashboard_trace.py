"""The dashboard in a real browser shows a team's trace id and links the team and its tasks to the
OTLP UI the server was configured with."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest

from agentscope_teams import tracing
from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import store_from_url
from agentscope_teams.teams import LocalTeamClient, Member

from ..backends import unique_namespace
from ..server.harness import Served, serve
from ..server.test_dashboard import Tab, tab
from .helpers import memory_provider

__all__ = ["tab"]  # the browser fixture, reused
TRACE_URL = "http://traces.example/trace/{trace_id}"


@pytest.fixture
def org() -> str:
    return unique_namespace()


@pytest.fixture
def served(tmp_path: Path, org: str) -> Iterator[Served]:
    with serve(f"file://{tmp_path / 'store'}", {"alice": (org, "alice")}, trace_url=TRACE_URL) as s:
        yield s


def test_the_team_view_links_the_team_and_its_tasks_to_their_trace(
    tab: Tab, served: Served, org: str
) -> None:
    provider, exporter = memory_provider()
    ctx = RuntimeContext(session_id="s-lead", user_id="alice", org_id=org)

    async def seed() -> str:  # what a traced lead writes: the team and a task inside its call
        async with store_from_url(served.store_url) as store:
            client = LocalTeamClient(store, ctx)
            with tracing.invoke_agent("lead", provider=provider, session_id="s-lead"):
                team = await client.create_team("crew", members=[Member(name="w1")])
                await client.assign_task(team.id, "Build the parser")
            return team.id

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API owns this thread's loop
        team_id = pool.submit(anyio.run, seed).result()
    [lead] = exporter.get_finished_spans()
    trace_id = f"{lead.context.trace_id:032x}"

    page = tab.page
    page.goto(f"{served.base_url}/?token={served.tokens['alice']}")
    page.click(f'[data-team-id="{team_id}"]')
    link = page.locator(f'#team-trace a[data-trace="{trace_id}"]')
    link.wait_for()
    assert link.inner_text() == trace_id
    assert link.get_attribute("href") == TRACE_URL.replace("{trace_id}", trace_id)
    task_link = page.locator(f'[data-task-id] a[data-trace="{trace_id}"]')
    task_link.wait_for()
    assert task_link.inner_text() == "trace"
    assert tab.errors == []
