"""Deprecated public names keep working and warn until the release that removes them
(docs/deprecation.md)."""

from __future__ import annotations

import warnings

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import InMemoryStore
from agentscope_teams.teams import LocalTeamClient

CTX = RuntimeContext(session_id="s", user_id="alice")


def test_lease_seconds_still_sets_the_task_lease() -> None:
    async def main() -> float:
        store = InMemoryStore()
        with pytest.warns(DeprecationWarning, match=r"lease_seconds=\) is renamed task_lease="):
            client = LocalTeamClient(store, CTX, lease_seconds=7.0)
        team = await client.create_team("crew", members=[])
        await client.spawn_member(team.id, "w1", "")
        task = await client.assign_task(team.id, "a")
        claimed = await client.claim_task(team.id, "w1", task.id)
        assert claimed is not None
        return claimed.lease_seconds

    assert anyio.run(main) == 7.0


def test_the_old_attribute_reads_the_new_one() -> None:
    client = LocalTeamClient(InMemoryStore(), CTX, task_lease=9.0)
    with pytest.warns(DeprecationWarning, match="lease_seconds is renamed task_lease"):
        assert client.lease_seconds == 9.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert LocalTeamClient(InMemoryStore(), CTX).task_lease == 60.0  # the new name: no warning


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [("agentscope_teams.store", "StoreBase", "StoreBackend"),
     ("agentscope_teams.teams", "TeamMember", "TeamActor")],
)  # fmt: skip
def test_renamed_classes_are_the_new_ones(module: str, old: str, new: str) -> None:
    package = __import__(module, fromlist=[old])
    with pytest.warns(DeprecationWarning, match=f"{old} is renamed {new}"):
        assert getattr(package, old) is getattr(package, new)


def test_set_output_still_attaches_an_output_to_an_unsaved_message() -> None:
    from agentscope_teams import AssistantMsg

    msg = AssistantMsg("done")
    with pytest.warns(DeprecationWarning, match="with_output"):
        msg.set_output({"score": 3}, {"score": 3})
    assert msg.output == {"score": 3} and msg.metadata["output"] == {"score": 3}
