from __future__ import annotations

from ..cli.conftest import cli  # noqa: F401  (the console-script fixture)
