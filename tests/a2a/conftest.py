from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from ..backends import REQUIRE_SERVICES
from ..cli.conftest import cli  # noqa: F401  (the console-script fixture)
from .helpers import processes

#: The key the plain a2a-sdk test agent (remote_server.py) asks for.
KEY = "remote-key-0123456789"


@pytest.fixture(scope="package")
def remote() -> Iterator[str]:
    """The base URL of a plain a2a-sdk agent running in another process (shared by the tests of
    this folder: it keeps no state between tasks)."""
    with processes(["tests.a2a.remote_server", KEY]) as (port,):
        yield f"http://127.0.0.1:{port}"


@pytest.fixture(scope="package")
def pydantic_ai_card() -> Iterator[str]:
    """The card URL of a pydantic-ai agent served by fasta2a in another process (the ``dev``
    extra installs it: CI, which sets AGENTSCOPE_TEAMS_REQUIRE_SERVICES, fails without it)."""
    if (
        importlib.util.find_spec("fasta2a") is None
        or importlib.util.find_spec("pydantic_ai") is None
    ):
        if REQUIRE_SERVICES:
            pytest.fail("fasta2a[pydantic-ai] is missing: pip install -e '.[dev]'")
        pytest.skip("fasta2a[pydantic-ai] is not installed")
    with processes(["tests.a2a.pydantic_ai_server"]) as (port,):
        yield f"http://127.0.0.1:{port}/.well-known/agent-card.json"
