"""``path_segment``: the one rule for an id (or key segment) as a file or directory name."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from agentscope_teams.store import JsonFileStore
from agentscope_teams.store.base import (
    PATH_SEGMENT_MAX_BYTES,
    decode_segment,
    encode_segment,
    is_shortened,
    path_segment,
)

SHORT = ["alice", "s:abc", "o:", "..", ".", "a/b", "日本", "%41", "x" * 200, ":" * 66]
LONG = ["a" * 256, "\U0001f600" * 63, ":" * 86, "x" * 201, "../" * 85, "日" * 67]


@pytest.mark.parametrize("segment", SHORT)
def test_short_segments_keep_their_escaped_name(segment: str) -> None:
    name = path_segment(segment)
    assert name == encode_segment(segment) and decode_segment(name) == segment
    assert not is_shortened(name) and "/" not in name and name not in (".", "..")


@pytest.mark.parametrize("segment", LONG)
def test_long_segments_keep_a_readable_head_and_a_hash(segment: str) -> None:
    name = path_segment(segment)
    raw = encode_segment(segment).encode()
    assert is_shortened(name) and "/" not in name
    assert len(name.encode()) <= 150 + 1 + 32 < 255
    assert raw.startswith(name.split("#")[0].encode())  # the head is the escaped id's beginning
    # the rule the file store has always used, so existing stores keep their file names
    assert name == f"{raw[:150].decode('utf-8', 'ignore')}#{hashlib.sha256(raw).hexdigest()[:32]}"
    twin = segment[:-1] + ("b" if segment[-1] != "b" else "c")
    assert path_segment(twin) != name


def test_a_smaller_budget_shortens_earlier() -> None:
    assert path_segment("a" * 100, 100) == "a" * 100
    name = path_segment("a" * 101, 100)
    assert is_shortened(name) and name.startswith("a" * 75 + "#") and len(name) == 75 + 33
    assert len(path_segment("\U0001f600" * 63, 100).encode()) <= 108  # cut at a character boundary


async def test_the_file_store_names_keys_by_the_same_rule(tmp_path: Path) -> None:
    segments = ["a" * 256, ":" * 86, "short"]
    async with JsonFileStore(tmp_path) as store:
        for s in segments:
            await store.put((s, "k"), b"v")
    names = sorted(d.name for d in (tmp_path / "kv").iterdir())
    assert names == sorted(path_segment(s) for s in segments)
    assert all(len(os.fsencode(n)) <= PATH_SEGMENT_MAX_BYTES for n in names)
