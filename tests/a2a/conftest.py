from __future__ import annotations

from collections.abc import Iterator

import pytest

from ..cli.conftest import cli  # noqa: F401  (the console-script fixture)
from .helpers import processes

#: The key the plain a2a-sdk test agent (remote_server.py) asks for.
KEY = "remote-key-0123456789"


@pytest.fixture(scope="module")
def remote() -> Iterator[str]:
    """The base URL of a plain a2a-sdk agent running in another process."""
    with processes(["tests.a2a.remote_server", KEY]) as (port,):
        yield f"http://127.0.0.1:{port}"
