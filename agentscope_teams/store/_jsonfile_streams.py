"""Stream segment files of :class:`~agentscope_teams.store.jsonfile.JsonFileStore`.

A stream is a directory of ``<first seq>.jsonl`` segments, one entry a line, plus ``meta.json`` with
the highest seq ever handed out once ``delete_stream`` ran. A line is only valid once its trailing
newline is on disk; readers ignore a partial last line and the next append truncates it.
"""

from __future__ import annotations

import bisect
import os
from pathlib import Path

from ._jsonfile_io import line_seq, parse, render_line, repair_tail, value_of


def segments(d: Path) -> list[tuple[int, Path]]:
    """``(first seq, path)`` of the segment files of stream directory ``d``, in seq order."""
    try:
        names = os.listdir(d)
    except FileNotFoundError:
        return []
    segs = [(int(n[:-6]), d / n) for n in names if n.endswith(".jsonl") and n[:-6].isdigit()]
    return sorted(segs)


def _meta_seq(d: Path) -> int:
    try:
        raw = (d / "meta.json").read_bytes()
    except FileNotFoundError:
        return 0
    seq = parse(raw, d / "meta.json").get("last_seq", 0)
    return seq if isinstance(seq, int) else 0


def last_seq(d: Path, segs: list[tuple[int, Path]]) -> tuple[int, int]:
    """Highest seq ever handed out and the size of the last segment (after repairing it)."""
    if not segs:
        return _meta_seq(d), 0
    first, path = segs[-1]
    size, line = repair_tail(path)
    last = first - 1 if line is None else line_seq(line, path)
    return max(last, _meta_seq(d)), size


def append_line(path: Path, seq: int, value: bytes) -> None:
    """Append entry ``seq`` to segment ``path`` (created if missing) and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    with open(fd, "ab") as f:
        f.write(render_line(seq, value))
        f.flush()
        os.fsync(f.fileno())


def read_entries(segs: list[tuple[int, Path]], after: int, limit: int) -> list[tuple[int, bytes]]:
    """Up to ``limit`` complete entries with a seq above ``after``."""
    # Segments before the last one starting at or below after + 1 hold only seqs <= after.
    i = max(bisect.bisect_right([first for first, _ in segs], after + 1) - 1, 0)
    out: list[tuple[int, bytes]] = []
    for _, path in segs[i:]:
        try:
            f = path.open("rb")
        except FileNotFoundError:
            continue  # removed by a concurrent delete_stream
        with f:
            for line in f:
                if not line.endswith(b"\n"):
                    break  # an append in progress (or a crashed one): not an entry yet
                if line_seq(line, path) > after:
                    data = parse(line, path)
                    out.append((int(data["seq"]), value_of(data, path)))
                    if len(out) >= limit:
                        return out
    return out
