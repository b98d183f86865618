"""The module paths of ``agentscope_teams.teams`` before its split keep working: each imports as
the very module now holding the code, with a DeprecationWarning naming the new path."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from agentscope_teams.teams._moved import MOVED

NEW = "agentscope_teams.teams."


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_an_old_path_is_the_new_module_and_warns(old: str, new: str) -> None:
    sys.modules.pop(NEW + old, None)
    with pytest.warns(DeprecationWarning, match=f"{NEW}{old} is deprecated: import {NEW}{new}"):
        module = importlib.import_module(NEW + old)
    assert module is importlib.import_module(NEW + new)


def test_old_names_are_the_same_objects() -> None:
    from agentscope_teams.teams.lead.extension import TeamLeadExtension
    from agentscope_teams.teams.member.extension import TeamMemberExtension
    from agentscope_teams.teams.queues.base import BoardQueue
    from agentscope_teams.teams.rules.transitions import created

    for old in ("extension", "queue"):  # an old path warns when first imported
        sys.modules.pop(NEW + old, None)
    with pytest.warns(DeprecationWarning):
        from agentscope_teams.teams.extension import TeamLeadExtension as lead
        from agentscope_teams.teams.extension import TeamMemberExtension as member
        from agentscope_teams.teams.queue import BoardQueue as queue
    with pytest.warns(DeprecationWarning, match="teams.rules.created is deprecated"):
        from agentscope_teams.teams.rules import created as old_created
    assert (lead, member, queue, old_created) == (
        TeamLeadExtension,
        TeamMemberExtension,
        BoardQueue,
        created,
    )


def test_the_old_rules_module_names_only_its_own_names() -> None:
    import agentscope_teams.teams.rules as rules

    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        rules.nothing_here  # noqa: B018


def test_the_warning_points_at_the_importing_line() -> None:
    """Run in a fresh interpreter, where the old module is not imported yet."""
    code = (
        "import warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n"
        "    import agentscope_teams.teams.queue_sql\n"
        "except DeprecationWarning as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "agentscope_teams.teams.queue_sql is deprecated: import "
        "agentscope_teams.teams.queues.sql instead"
    ), out.stderr
