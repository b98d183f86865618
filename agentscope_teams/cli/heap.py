"""The long-running commands' heap settings: freeze what start-up allocated, collect less often.

``gc.freeze()`` moves every object alive at that moment (imported modules, classes, schemas,
connection pools, the parsed specs) into a permanent generation the cyclic collector no longer
walks. A full collection then visits only what the calls allocated since, which measured on 1,000
concurrent calls cut the collector's share of CPU from about a third to a quarter
(``bench/RESULTS.md``, issue 26).

The collector's generation-0 threshold (Python's default: 700 allocations) is raised to
:data:`YOUNG_THRESHOLD`: with many calls in flight each young collection walks every object they
hold, and at 10,000 the collector's CPU per call fell from ≈ 0.9 to ≈ 0.2 ms (h-cpu2 in
``bench/RESULTS.md``) for a few megabytes more of garbage waiting between collections.
``AGENTSCOPE_TEAMS_GC_THRESHOLD`` overrides it (``700`` restores Python's default).

Both are process-wide, so only an application's entry point (the ``worker`` and ``serve``
commands) may do them, once, after start-up; library code never does.
"""

from __future__ import annotations

import gc
import os

from ..errors import ConfigurationError

#: Generation 0's threshold in ``worker`` and ``serve`` unless the environment says otherwise.
YOUNG_THRESHOLD = 10_000
ENV = "AGENTSCOPE_TEAMS_GC_THRESHOLD"


def young_threshold(value: str | None) -> int:
    """Generation 0's threshold from ``value`` (the environment's text; None or empty: the
    default); a value that is not a positive integer is a :class:`ConfigurationError`."""
    if not value:
        return YOUNG_THRESHOLD
    try:
        found = int(value)
    except ValueError:
        found = 0
    if found < 1:
        raise ConfigurationError(
            f"{ENV}={value!r} is not a positive integer; unset it or use e.g. 700"
        )
    return found


def set_young_threshold(threshold: int) -> None:
    """Set generation 0's collection threshold, keeping the older generations' own."""
    gc.set_threshold(threshold, *gc.get_threshold()[1:])


def freeze_startup_heap() -> None:
    """Collect start-up's garbage, exempt every surviving object from later collections, and
    raise generation 0's threshold (see the module docs)."""
    threshold = young_threshold(os.environ.get(ENV))
    gc.collect()
    gc.freeze()
    set_young_threshold(threshold)
