"""``JsonFileStore`` specifics: on-disk layout, long and hostile names, crash leftovers, locking."""

from __future__ import annotations

import fcntl
import json
import os
import random
from pathlib import Path

import anyio
import pytest

from agentscope_teams.errors import (
    ConfigurationError,
    SchemaVersionError,
    StoreError,
    VersionConflict,
)
from agentscope_teams.store import BaseStore, Entry, InMemoryStore, Key, encode_key, jsonfile
from agentscope_teams.store.jsonfile import JsonFileStore
from agentscope_teams.testing._store_support import HOSTILE_SEGMENTS, UNICODE_SEGMENTS

pytestmark = pytest.mark.anyio


def ls(d: Path) -> list[str]:
    return sorted(os.listdir(d))


def all_files(top: Path) -> list[Path]:
    return [Path(d) / f for d, _, files in os.walk(top) for f in files]


async def list_all(store: BaseStore, prefix: Key, page: int) -> list[Key]:
    out: list[Key] = []
    after: Key | None = None
    while batch := await store.list_keys(prefix, limit=page, after=after):
        out.extend(batch)
        after = batch[-1]
    return out


# --------------------------------------------------------------------------- human-readable files


async def test_files_are_readable_json_with_key_version_and_text(tmp_path: Path) -> None:
    async with JsonFileStore(tmp_path) as store:
        await store.put(("sessions", "s1", "state"), b'{"turn": 3}')
        await store.put(("sessions", "s1", "state"), "héllo\nworld".encode())
        await store.put(("sessions", "s1", "blob"), b"\xff\x00\xfe", ttl=60)
    state = json.loads((tmp_path / "kv" / "sessions" / "s1" / "state.json").read_text("utf-8"))
    assert state == {
        "schema_version": 1,
        "key": ["sessions", "s1", "state"],
        "version": 2,
        "expires_at": None,
        "text": "héllo\nworld",
    }
    blob = json.loads((tmp_path / "kv" / "sessions" / "s1" / "blob.json").read_text("utf-8"))
    assert blob["b64"] == "/wD+" and "text" not in blob
    assert isinstance(blob["expires_at"], float)


async def test_stream_lines_are_readable_json(tmp_path: Path) -> None:
    async with JsonFileStore(tmp_path) as store:
        await store.append(("team", "inbox"), b"hi")
        await store.append(("team", "inbox"), b"\xff")
    (segment,) = all_files(tmp_path / "streams" / "team" / "inbox.stream")
    lines = [json.loads(line) for line in segment.read_text("utf-8").splitlines()]
    assert lines == [{"seq": 1, "text": "hi"}, {"seq": 2, "b64": "/w=="}]


async def test_hand_reformatted_file_is_still_read(tmp_path: Path) -> None:
    async with JsonFileStore(tmp_path) as store:
        await store.put(("cfg",), b"v1")
        path = tmp_path / "kv" / "cfg.json"
        data = json.loads(path.read_text("utf-8"))
        path.write_text(json.dumps(dict(reversed(data.items())), indent=4), "utf-8")
        assert await store.get(("cfg",)) == Entry(b"v1", 1)
        assert await store.list_keys(()) == [("cfg",)]
        assert await store.put(("cfg",), b"v2", expected_version=1) == 2


async def test_newer_schema_version_is_refused(tmp_path: Path) -> None:
    async with JsonFileStore(tmp_path) as store:
        await store.put(("k",), b"v")
        path = tmp_path / "kv" / "k.json"
        path.write_text(
            path.read_text("utf-8").replace('"schema_version": 1', '"schema_version": 99')
        )
        with pytest.raises(SchemaVersionError, match=r"k\.json"):
            await store.get(("k",))
        with pytest.raises(SchemaVersionError):
            await store.put(("k",), b"w")


# --------------------------------------------------------------------------- names and layout


async def test_nested_keys_and_suffix_lookalikes_coexist(tmp_path: Path) -> None:
    keys: list[Key] = [
        ("a", "b"),
        ("a", "b", "c"),
        ("a", "b.json"),
        ("a", "b.json", "c"),
        ("a", "b.stream"),
        ("a", "b.stream", "c"),
        ("a", "b.json#"),
        ("a", "b#.tmp"),
    ]
    async with JsonFileStore(tmp_path) as store:
        for i, key in enumerate(keys):
            assert await store.put(key, str(i).encode(), expected_version=0) == 1
            await store.append(key, str(i).encode())
        for i, key in enumerate(keys):
            assert await store.get(key) == Entry(str(i).encode(), 1)
            assert [v for _, v in await store.read(key)] == [str(i).encode()]
        assert await store.list_keys(("a",)) == sorted(keys, key=encode_key)
        assert await store.list_keys(("a", "b.json")) == [("a", "b.json", "c")]


async def test_long_segments_use_short_file_names_and_list_in_order(tmp_path: Path) -> None:
    shared = "p" * 400
    segments = [shared + "a", shared + "b", shared, "日" * 300, "/" * 120, "x" * 66, "x" * 67]
    keys: list[Key] = [("ns", s) for s in segments]
    keys += [("ns", s, "child") for s in segments] + [("ns", s, s) for s in segments[:3]]
    async with JsonFileStore(tmp_path) as store:
        for i, key in enumerate(keys):
            await store.put(key, str(i).encode(), expected_version=0)
            await store.append(key, str(i).encode())
        for i, key in enumerate(keys):
            assert await store.get(key) == Entry(str(i).encode(), 1)
            assert await store.read(key) == [(1, str(i).encode())]
        expected = sorted(keys, key=encode_key)
        assert await list_all(store, ("ns",), page=3) == expected
        for s in segments:
            assert await store.list_keys(("ns", s)) == sorted(
                [k for k in keys if k[:2] == ("ns", s) and len(k) == 3], key=encode_key
            )
    names = [p.name for p in all_files(tmp_path)] + [Path(d).name for d, _, _ in os.walk(tmp_path)]
    assert max(len(n.encode()) for n in names) <= 255
    assert any("#" in n for n in names), "long segments were expected to be hashed"


async def test_hostile_segments_never_leave_root(tmp_path: Path) -> None:
    root = tmp_path / "outer" / "root"
    segments = HOSTILE_SEGMENTS + UNICODE_SEGMENTS + ["..", "../..", "/etc/passwd", "~root"]
    async with JsonFileStore(root) as store:
        for s in segments:
            for key in ((s,), (s, s), ("..", s, "..")):
                await store.put(key, b"v")
                await store.append(key, b"e")
        assert len(await list_all(store, (), page=50)) == len(
            {k for s in segments for k in ((s,), (s, s), ("..", s, ".."))}
        )
    outside = [p for p in all_files(tmp_path) if not p.resolve().is_relative_to(root.resolve())]
    assert outside == []
    assert ls(tmp_path) == ["outer"]
    assert ls(tmp_path / "outer") == ["root"]
    assert ls(root) == ["kv", "locks", "streams"]


async def test_listing_matches_memory_store_on_random_keys(tmp_path: Path) -> None:
    rng = random.Random(7)
    alphabet = ["a", "b", "a.json", "b.stream", "%", "/", "é", "a" * 250, "a" * 251, "~", " ", "0"]
    async with JsonFileStore(tmp_path) as store:
        memory = InMemoryStore()
        for _ in range(300):
            key = tuple(rng.choice(alphabet) for _ in range(rng.randint(1, 3)))
            if rng.random() < 0.25:
                assert await store.delete(key) == await memory.delete(key)
            else:
                await store.put(key, b"v")
                await memory.put(key, b"v")
        for prefix in [(), ("a",), ("a" * 250,), ("%",), ("a", "a.json")]:
            for page in (1, 7, 1000):
                expected = await list_all(memory, prefix, page)
                assert await list_all(store, prefix, page) == expected, (prefix, page)


async def test_delete_removes_empty_directories(tmp_path: Path) -> None:
    async with JsonFileStore(tmp_path) as store:
        await store.put(("a", "b", "c", "d"), b"v")
        await store.put(("a", "x"), b"v")
        await store.delete(("a", "b", "c", "d"))
        assert ls(tmp_path / "kv" / "a") == ["x.json"]
        await store.delete(("a", "x"))
        assert ls(tmp_path / "kv") == []


async def test_root_that_is_a_file_is_a_configuration_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigurationError, match="not a directory"):
        async with JsonFileStore(tmp_path / "file"):
            pass


# --------------------------------------------------------------------------- crash leftovers


async def test_torn_stream_tail_is_ignored_then_repaired(tmp_path: Path) -> None:
    stream = ("s",)
    async with JsonFileStore(tmp_path) as store:
        assert await store.append(stream, b"one") == 1
        (segment,) = all_files(tmp_path / "streams" / "s.stream")
        with segment.open("ab") as f:
            f.write(b'{"seq": 2, "text": "half wri')  # a writer killed mid-append
        assert await store.read(stream) == [(1, b"one")]
        assert await store.append(stream, b"two") == 2
        assert await store.read(stream) == [(1, b"one"), (2, b"two")]
    assert [json.loads(line)["seq"] for line in segment.read_text().splitlines()] == [1, 2]


async def test_leftover_temp_file_is_harmless(tmp_path: Path) -> None:
    async with JsonFileStore(tmp_path) as store:
        await store.put(("d", "k"), b"committed")
        (tmp_path / "kv" / "d" / "k.json#.tmp").write_bytes(b'{"schema_version": 1, "ke')
        assert await store.get(("d", "k")) == Entry(b"committed", 1)
        assert await store.list_keys(("d",)) == [("d", "k")]
        assert await store.put(("d", "k"), b"next", expected_version=1) == 2
    assert ls(tmp_path / "kv" / "d") == ["k.json"]


async def test_streams_roll_over_to_new_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jsonfile, "SEGMENT_MAX_ENTRIES", 10)
    stream = ("log",)
    async with JsonFileStore(tmp_path) as store:
        entries = [
            (await store.append(stream, f"{i}".encode()), f"{i}".encode()) for i in range(35)
        ]
        segments = ls(tmp_path / "streams" / "log.stream")
        assert [int(n.split(".")[0]) for n in segments] == [1, 11, 21, 31]
        for after in (0, 9, 10, 11, 20, 34, 35):
            assert await store.read(stream, after=after, limit=7) == entries[after : after + 7]


async def test_seqs_survive_delete_stream_and_restart(tmp_path: Path) -> None:
    async with JsonFileStore(tmp_path) as store:
        for _ in range(5):
            await store.append(("s",), b"x")
        assert await store.delete_stream(("s",)) is True
    async with JsonFileStore(tmp_path) as reopened:
        assert await reopened.read(("s",)) == []
        assert await reopened.append(("s",), b"y") == 6


# --------------------------------------------------------------------------- locking


async def test_two_instances_in_one_process_exclude_each_other(tmp_path: Path) -> None:
    key = ("counter",)
    stores = [JsonFileStore(tmp_path), JsonFileStore(tmp_path)]

    async def bump(store: JsonFileStore) -> None:
        for _ in range(25):
            while True:
                entry = await store.get(key)
                n, version = (0, 0) if entry is None else (int(entry.value), entry.version)
                try:
                    await store.put(key, str(n + 1).encode(), expected_version=version)
                    break
                except VersionConflict:
                    continue

    async with anyio.create_task_group() as tg:
        for store in stores * 3:
            tg.start_soon(bump, store)
    assert await stores[0].get(key) == Entry(b"150", 150)


async def test_held_lock_times_out_with_store_error(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path, lock_timeout=0.2)
    await store.setup()
    stripe = store._stripe("kv", ("k",))
    fd = os.open(tmp_path / "locks" / f"{stripe:02d}.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(StoreError, match="timed out"):
            await store.put(("k",), b"v")
    finally:
        os.close(fd)
    assert await store.put(("k",), b"v") == 1


async def test_forked_child_does_not_keep_a_held_lock(tmp_path: Path) -> None:
    store = JsonFileStore(tmp_path, lock_timeout=5.0)
    await store.setup()
    stripe = store._stripe("kv", ("k",))
    read_end, write_end = os.pipe()
    with store._flock(stripe, deadline=float("inf")):
        pid = os.fork()
        if pid == 0:  # the child holds a copy of every descriptor; it just waits for the pipe
            os.close(write_end)
            os.read(read_end, 1)
            os._exit(0)
    os.close(read_end)
    try:
        assert await store.put(("k",), b"v") == 1  # would time out if the child kept the lock
    finally:
        os.close(write_end)
        await anyio.to_thread.run_sync(os.waitpid, pid, 0)
