"""A team budget across `agentscope-teams worker` processes: members of one team, served by two
real worker processes, call a local OpenAI-compatible provider until the team's budget is spent;
the provider saw at most one call's usage past it, and the lead was told which budget stopped whom."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from agentscope_teams import RuntimeContext
from agentscope_teams.store import store_from_url
from agentscope_teams.teams import LocalTeamClient
from agentscope_teams.teams.directory import TeamRuntimeRecord, put_record

from ..backends import StoreSpec
from .provider import COMPLETION_TOKENS, PROMPT_TOKENS, FakeProvider

ROOT = Path(__file__).resolve().parents[2]
CALL = PROMPT_TOKENS + COMPLETION_TOKENS
MEMBERS = ("a", "b", "c", "d")


def _start(spec: StoreSpec, org: str, provider: FakeProvider, log: Path) -> subprocess.Popen[bytes]:
    cmd = [sys.executable, "-m", "agentscope_teams.cli", "worker", "--store", spec.url]
    cmd += ["--specs", str(ROOT / "specs"), "--org", org, "--poll", "0.05", "--lease-ttl", "2"]
    cmd += ["--model", "openai:fake-model"]
    env = {**os.environ, "OPENAI_BASE_URL": provider.base_url, "OPENAI_API_KEY": "k"}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)


@pytest.mark.parametrize("store_spec", ["sqlite", "postgres", "redis"], indirect=True)
def test_a_team_budget_holds_across_worker_processes(
    store_spec: StoreSpec, ctx: RuntimeContext, tmp_path: Path
) -> None:
    assert ctx.org_id is not None
    budget = 1500

    async def make_team() -> str:
        async with store_from_url(store_spec.url) as store:
            client = LocalTeamClient(store, ctx)
            team = await client.create_team("spenders", max_tokens=budget)
            ws = str(tmp_path / "ws")
            record = TeamRuntimeRecord(
                team_id=team.id, org_id=ctx.org_id, user_id=ctx.user_id, lead=team.lead,
                mode="workers", workspace=ws, root=ws,
            )  # fmt: skip
            await put_record(store, ctx, record)  # the workers serve it
            for name in MEMBERS:
                await client.spawn_member(team.id, name, "reviewer")
            return team.id

    async def drive(team_id: str, provider: FakeProvider) -> list[str]:
        """Wake the members with messages until the budget is used, then read the lead's notes."""
        async with store_from_url(store_spec.url) as store:
            client = LocalTeamClient(store, ctx)
            with anyio.move_on_after(120):
                for i in itertools.count():
                    if provider.tokens >= budget:
                        break
                    for name in MEMBERS:  # each message wakes its member for one model call
                        await client.send_message(team_id, "lead", name, f"note {i}")
                    await anyio.sleep(0.3)
            await anyio.sleep(3)  # any call still in flight lands
            # Wake every member once more: each now asks for a call the budget refuses (the last
            # round may have spent the budget exactly, leaving no call to refuse).
            for name in MEMBERS:
                await client.send_message(team_id, "lead", name, "one more")
            notes: list[str] = []
            with anyio.move_on_after(60):
                while not notes:
                    unread = await client.unread(team_id, "lead")
                    notes = [m.content for m in unread if m.content.startswith("[budget]")]
                    await anyio.sleep(0.2)
            return notes

    with FakeProvider() as provider:
        team_id = anyio.run(make_team)
        procs = [_start(store_spec, ctx.org_id, provider, tmp_path / f"w{i}.log") for i in (0, 1)]
        try:
            notes = anyio.run(drive, team_id, provider)
        finally:
            for proc in procs:
                proc.kill()
                proc.wait(timeout=10)
    logs = "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("w*.log"))
    assert budget <= provider.tokens <= budget + CALL, logs[-3000:]
    assert notes and all(f"budget team:{team_id} is spent" in n for n in notes), logs[-3000:]
