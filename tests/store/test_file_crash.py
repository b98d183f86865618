"""Crash safety of ``JsonFileStore``: a writer SIGKILLed at random moments never leaves a torn file.

Each round spawns a writer process that puts large values to a few keys and appends to two streams
(one of them deleted now and then), lets it run a random while and SIGKILLs it. A fresh store then
checks that every file parses, every key holds a complete value some writer wrote, the stream is
contiguous and keeps counting, and seqs are never handed out twice.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import multiprocessing
import os
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams.store import Key
from agentscope_teams.store.jsonfile import JsonFileStore

pytestmark = pytest.mark.slow

ROUNDS = 20
KEYS = ("k0", "k1", "k2")  # k2 is deleted every fifth iteration
STREAM: Key = ("crash", "log")
RECYCLED: Key = ("crash", "recycled")  # delete_stream every seventh iteration
START_TIMEOUT = 120.0  # hang guard only


def make_value(name: str, round_no: int, i: int, size: int) -> bytes:
    """A self-describing value: ``name|round|i|`` then ``size`` bytes, text or binary by parity."""
    head = f"{name}|{round_no}|{i}|".encode()
    block = hashlib.sha256(head).digest()
    if (round_no + i) % 2:
        return head + (block.hex() * (size // 64 + 1))[:size].encode()
    return head + b"\xff" + (block * (size // 32 + 1))[:size]


def key_size(round_no: int, i: int) -> int:
    return 50_000 + (round_no * 104_729 + i * 7_919) % 450_000


def entry_size(round_no: int, i: int) -> int:
    """Mostly small entries, every third one large so a kill can land inside its write."""
    base, spread = (1_000, 20_000) if i % 3 else (200_000, 400_000)
    return base + (round_no * 7_919 + i * 104_729) % spread


def parse_value(name: str, value: bytes, size: Any) -> tuple[int, int]:
    """``(round, i)`` of a value the writer produced; fails when the value is not one of them."""
    who, round_no, i, _ = value.split(b"|", 3)
    assert who.decode() == name, value[:80]
    r, n = int(round_no), int(i)
    assert value == make_value(name, r, n, size(r, n)), f"{name}: value of round {r}, i {n} differs"
    return r, n


# --------------------------------------------------------------------------- the writer process


def writer(root: str, round_no: int, started: Any) -> None:
    anyio.run(write_forever, root, round_no, started)


async def write_forever(root: str, round_no: int, started: Any) -> None:
    store = JsonFileStore(root)
    for i in itertools.count():
        for name in KEYS:
            await store.put(("crash", name), make_value(name, round_no, i, key_size(round_no, i)))
        await store.append(STREAM, make_value("log", round_no, i, entry_size(round_no, i)))
        await store.append(RECYCLED, make_value("rec", round_no, i, entry_size(round_no, i)))
        if i % 5 == 4:
            await store.delete(("crash", "k2"))
        if i % 7 == 6:
            await store.delete_stream(RECYCLED)
        if i == 0:
            started.set()  # one full iteration is on disk: every round leaves a trace


# --------------------------------------------------------------------------- the checks


def assert_files_parse(root: Path) -> None:
    """Every key file and meta file is valid JSON; every complete stream line is too."""
    for d, _, files in os.walk(root):
        for name in files:
            path = Path(d) / name
            if name.endswith(".json"):
                json.loads(path.read_bytes())
            elif name.endswith(".jsonl"):
                lines = path.read_bytes().split(b"\n")
                for line in lines[:-1]:  # the last piece is b"" or a torn, ignored tail
                    json.loads(line)


async def read_all(store: JsonFileStore, stream: Key, after: int = 0) -> list[tuple[int, bytes]]:
    out: list[tuple[int, bytes]] = []
    while page := await store.read(stream, after=out[-1][0] if out else after, limit=37):
        out.extend(page)
    return out


async def check_keys(store: JsonFileStore, round_no: int) -> None:
    assert set(await store.list_keys(("crash",))) <= {("crash", n) for n in KEYS}
    for name in KEYS:
        entry = await store.get(("crash", name))
        if entry is None:
            assert name == "k2", f"{name} vanished"
            continue
        r, _ = parse_value(name, entry.value, key_size)
        if name != "k2":
            assert r == round_no, f"{name} holds a value of round {r}, not of the last round"
        # The version bookkeeping survived: a conditional rewrite of the same value succeeds.
        version = await store.put(("crash", name), entry.value, expected_version=entry.version)
        assert version == entry.version + 1


@dataclass
class Checker:
    """What earlier rounds verified, so each round only reads the new stream entries."""

    root: Path
    stream_upto: int = 0
    rounds: dict[int, list[int]] = field(default_factory=dict)  # round -> its i values in STREAM
    recycled_high: int = 0

    async def check(self, round_no: int) -> None:
        assert_files_parse(self.root)
        async with JsonFileStore(self.root) as store:
            await check_keys(store, round_no)
            await self.check_stream(store, round_no)
            await self.check_recycled(store)

    async def check_stream(self, store: JsonFileStore, round_no: int) -> None:
        new = await read_all(store, STREAM, after=self.stream_upto)
        expected_seqs = list(range(self.stream_upto + 1, self.stream_upto + len(new) + 1))
        assert [seq for seq, _ in new] == expected_seqs, "seqs not contiguous"
        for _, value in new:
            if not value.startswith(b"probe|"):
                r, i = parse_value("log", value, entry_size)
                self.rounds.setdefault(r, []).append(i)
        assert sorted(self.rounds) == list(range(round_no + 1)), "a round left no stream entry"
        for r, idx in self.rounds.items():
            assert idx == list(range(len(idx))), f"round {r}: entries {idx} not 0..n in order"
        probe = await store.append(STREAM, f"probe|{round_no}".encode())
        assert probe == self.stream_upto + len(new) + 1, "the seq counter lost its place"
        self.stream_upto = probe

    async def check_recycled(self, store: JsonFileStore) -> None:
        entries = await read_all(store, RECYCLED)
        seqs = [seq for seq, _ in entries]
        assert seqs == sorted(set(seqs))
        for _, value in entries:
            if not value.startswith(b"probe|"):
                parse_value("rec", value, entry_size)
        probe = await store.append(RECYCLED, b"probe|")
        assert probe > max([self.recycled_high, *seqs]), "a seq was reused after delete_stream"
        self.recycled_high = probe

    async def check_whole_stream(self) -> None:
        async with JsonFileStore(self.root) as store:
            seqs = [seq for seq, _ in await read_all(store, STREAM)]
        assert seqs == list(range(1, self.stream_upto + 1))


def test_sigkilled_writer_never_corrupts_the_store(tmp_path: Path) -> None:
    checker = Checker(tmp_path / "store")
    ctx = multiprocessing.get_context("spawn")
    rng = random.Random()
    for round_no in range(ROUNDS):
        started = ctx.Event()
        args = (str(checker.root), round_no, started)
        proc = ctx.Process(target=writer, args=args, daemon=True)
        proc.start()
        try:
            assert started.wait(START_TIMEOUT), f"round {round_no}: the writer never finished i=0"
            time.sleep(rng.uniform(0.0, 0.4))  # kill at a random moment, mid-write or not
        finally:
            proc.kill()
            proc.join()
        assert proc.exitcode == -signal.SIGKILL, f"round {round_no}: writer died on its own"
        anyio.run(checker.check, round_no)
    anyio.run(checker.check_whole_stream)
