"""``list_keys`` of :class:`~agentscope_teams.store.jsonfile.JsonFileStore`: a sorted directory walk.

Keys come out in the order of their encoding: a directory sorts as ``<encoded prefix><segment>/``,
and a group whose keys all precede ``after`` is skipped without being read. :func:`expired_under`
finds the keys of expired entries (for ``purge_expired``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..errors import StoreError
from ._jsonfile_io import damaged, name_segment, read_header
from .base import Key, encode_key, encode_segment


def walk(d: Path, enc: str, depth: int, after: str | None, limit: int, out: list[Key]) -> None:
    """Append live keys under ``d`` (encoded prefix ``enc``) to ``out`` in encoding order."""
    now = time.time()
    for sort_key, path, is_dir in _entries(d, enc, depth):
        if len(out) >= limit:
            return
        if is_dir:
            # Every key below starts with ``sort_key``; skip the group if all precede ``after``.
            if after is None or after < sort_key or after.startswith(sort_key):
                walk(path, sort_key, depth + 1, after, limit, out)
        elif after is None or sort_key > after:
            head = read_header(path)
            if head is not None and encode_key(head.key) != sort_key:
                raise damaged(path, f"holds key {head.key!r}; the file was moved")
            if head is not None and head.live(now):
                out.append(head.key)


def _entries(d: Path, enc: str, depth: int) -> list[tuple[str, Path, bool]]:
    """``(sort key, path, is_dir)`` for one directory; a directory sorts as ``enc + seg + '/'``."""
    try:
        scanned = list(os.scandir(d))
    except (FileNotFoundError, NotADirectoryError):
        return []
    items: list[tuple[str, Path, bool]] = []
    for entry in scanned:
        path = Path(entry.path)
        if entry.is_dir(follow_symlinks=False):
            seg = name_segment(entry.name)
            seg = seg if seg is not None else _hashed_dir_segment(path, depth)
            if seg is not None:
                items.append((f"{enc}{seg}/", path, True))
        elif entry.name.endswith(".json"):
            seg = name_segment(entry.name[:-5])
            if seg is None:
                seg = _hashed_file_segment(path, depth)
            if seg is not None:
                items.append((enc + seg, path, False))
    items.sort()
    return items


def _hashed_file_segment(path: Path, depth: int) -> str | None:
    """The real encoded last segment of a key file with a hashed name, from the key it holds."""
    head = read_header(path)
    ok = head is not None and len(head.key) == depth + 1
    return encode_segment(head.key[depth]) if head is not None and ok else None


def _hashed_dir_segment(d: Path, depth: int) -> str | None:
    """The real encoded segment of a hashed directory name, from any key file below it."""
    for dirpath, _dirs, files in os.walk(d):
        for name in files:
            if name.endswith(".json"):
                head = read_header(Path(dirpath) / name)
                if head is not None and len(head.key) > depth:
                    return encode_segment(head.key[depth])
    return None


def expired_under(root: Path, limit: int | None) -> list[Key]:
    """The keys of expired entries in the key files under ``root`` (at most ``limit``); a file
    that cannot be read as a key file is left alone (readers report it)."""
    now, out = time.time(), []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            if not name.endswith(".json"):
                continue  # a write's temp file
            try:
                head = read_header(Path(dirpath) / name)
            except (StoreError, OSError):
                continue
            if head is not None and not head.live(now):
                out.append(head.key)
                if limit is not None and len(out) >= limit:
                    return out
    return out
