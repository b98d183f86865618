"""Child-process side of the multi-process control-plane test (imported by spawned processes)."""

from __future__ import annotations

import anyio

from agentscope_teams.server import ControlPlaneTeamClient

DEADLINE = 240.0


def claim_all_over_http(
    base_url: str, team_id: str, tokens: dict[str, str]
) -> list[tuple[str, str]]:
    """One claimer per member (each with its own token) claims and completes until none is left."""

    async def main() -> list[tuple[str, str]]:
        log: list[tuple[str, str]] = []

        async def claimer(member: str, token: str) -> None:
            async with ControlPlaneTeamClient(base_url, token) as client:
                while (task := await client.claim_task(team_id, member)) is not None:
                    await client.complete_task(team_id, member, task.id, f"done by {member}")
                    log.append((member, task.id))

        async with anyio.create_task_group() as tg:
            for member, token in tokens.items():
                tg.start_soon(claimer, member, token)
        return log

    return anyio.run(main)
