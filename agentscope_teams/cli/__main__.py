"""``python -m agentscope_teams.cli``: the same as the ``agentscope-teams`` console script."""

from __future__ import annotations

import sys

from . import main

sys.exit(main())
