"""What a full ``python -m bench`` run keeps of ``bench/RESULTS.md``.

A full run regenerates every measured section, but ``RESULTS.md`` also holds what people wrote:
the investigations (each a ``### Issue NN (...)`` section: what was changed, measured in
interleaved runs, and why) and the notes from ``## Profile notes`` to the end (why missed targets
are missed). A full run keeps both, as they were, after the sections it measured.
"""

from __future__ import annotations

import re

NOTES = "## Profile notes"
INVESTIGATION = re.compile(r"^### Issue \d+")
RECORDED = "## Recorded investigations (kept by full runs)"


def _blocks(text: str) -> list[str]:
    """``text`` cut before every ``##`` or ``###`` heading."""
    return re.split(r"(?m)^(?=#{2,3} )", text)


def kept_parts(previous: str) -> tuple[list[str], str]:
    """The investigations and the notes (from :data:`NOTES` on) of a previous ``RESULTS.md``."""
    head, found, tail = previous.partition(NOTES)
    notes = (found + tail).rstrip() + "\n" if found else ""
    investigations = [b.rstrip() + "\n" for b in _blocks(head) if INVESTIGATION.match(b)]
    return investigations, notes


def merged(generated: str, previous: str) -> str:
    """A new ``RESULTS.md``: the ``generated`` sections, then what ``previous`` kept."""
    investigations, notes = kept_parts(previous)
    parts = [generated.rstrip() + "\n"]
    if investigations:
        parts.append(RECORDED + "\n\n" + "\n".join(investigations))
    if notes:
        parts.append(notes)
    return "\n".join(parts)
