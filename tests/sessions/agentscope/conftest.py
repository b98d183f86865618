"""The AgentScope 2.0.11 interpreter for the import tests (see :mod:`.anchor`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ...backends import REQUIRE_SERVICES
from .anchor import AnchorUnavailable, anchor_python


@pytest.fixture(scope="session")
def agentscope_python() -> Path:
    try:
        return anchor_python()
    except AnchorUnavailable as exc:
        msg = f"AgentScope 2.0.11 cannot be installed for the import tests: {exc}"
        if REQUIRE_SERVICES:
            pytest.fail(msg + " (AGENTSCOPE_TEAMS_REQUIRE_SERVICES=1 forbids skipping)")
        pytest.skip(msg)
