"""The long-running commands' heap setting: freeze what start-up allocated.

``gc.freeze()`` moves every object alive at that moment (imported modules, classes, schemas,
connection pools, the parsed specs) into a permanent generation the cyclic collector no longer
walks. A full collection then visits only what the calls allocated since, which measured on 1,000
concurrent calls cut the collector's share of CPU from about a third to a quarter
(``bench/RESULTS.md``, issue 26). It is process-wide, so only an application's entry point (the
``worker`` and ``serve`` commands) may do it, once, after start-up; library code never does.
"""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Collect start-up's garbage, then exempt every surviving object from later collections."""
    gc.collect()
    gc.freeze()
