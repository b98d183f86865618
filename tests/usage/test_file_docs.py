"""The file store's usage documents (:class:`~agentscope_teams.usage.docs.FileDocs`)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import anyio
import pytest

from agentscope_teams.errors import StoreError
from agentscope_teams.usage.docs import FileDocs, doc_id

pytestmark = pytest.mark.anyio


async def test_a_child_forked_during_an_update_does_not_keep_the_lock(tmp_path: Path) -> None:
    docs = FileDocs(tmp_path)
    read_end, write_end = os.pipe()
    started_read, started_write = os.pipe()  # the child runs its code (after the fork hooks)
    pids: list[int] = []

    def fork_meanwhile(found: dict[str, object]) -> tuple[dict[str, object], None]:
        pid = os.fork()  # as another thread of the process might, while this one holds the lock
        if pid == 0:  # the child holds a copy of every descriptor; it just waits for the pipe
            os.close(write_end)
            os.write(started_write, b"x")
            os.read(read_end, 1)
            os._exit(0)
        pids.append(pid)
        return {"budget": {"ut": 1}}, None

    await docs.update("test", ["budget"], fork_meanwhile)  # type: ignore[arg-type]
    # the child's fork hooks have run once it writes (until then it holds every inherited fd)
    await anyio.to_thread.run_sync(os.read, started_read, 1)
    os.close(read_end)
    fd = os.open(docs.dir / "lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: every update would hang
    finally:
        os.close(fd)
        os.close(write_end)
        os.close(started_read)
        os.close(started_write)
        await anyio.to_thread.run_sync(os.waitpid, pids[0], 0)


async def test_a_usage_document_is_durable_before_and_after_its_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each document written is fsynced under its temporary name before the rename and its
    directory is fsynced after it (else a crash could leave an empty or old document once the
    rename is durable): the file store's own atomic write, one home."""
    docs = FileDocs(tmp_path)
    events: list[tuple[str, str]] = []
    fsync, replace = os.fsync, os.replace

    def recording_fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        fsync(fd)

    def recording_replace(src: object, dst: object) -> None:
        events.append(("replace", str(dst)))
        replace(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "fsync", recording_fsync)
    monkeypatch.setattr(os, "replace", recording_replace)

    def change(found: dict[str, object]) -> tuple[dict[str, object], None]:
        return {"b1": {"ut": 1}, "b2": {"ut": 2}}, None

    await docs.update("test", ["b1", "b2"], change)  # type: ignore[arg-type]
    monkeypatch.undo()
    folder = str((docs.dir / "docs").resolve())
    for name in ("b1", "b2"):
        target = str((docs.dir / "docs" / doc_id(name)).resolve())
        at = events.index(("replace", target))
        synced = [path for kind, path in events[:at] if kind == "fsync"]
        assert any(p.startswith(target) and p != target for p in synced), events  # the temp file
        assert ("fsync", folder) in events[at + 1 :], events
    assert [await docs.update("read", ["b2"], lambda d: ({}, d["b2"]))] == [{"ut": 2}]


@pytest.mark.parametrize("text", ["", '{"ut": 1', "[1, 2]"], ids=["empty", "torn", "not-a-dict"])
async def test_a_damaged_usage_document_is_named_with_what_to_do(tmp_path: Path, text: str) -> None:
    """A budget document left empty or torn (a crash before its writes were fsynced, a hand
    edit) fails each governed call with a store error naming the file and what to do, not a
    bare JSON error nobody can place."""
    docs = FileDocs(tmp_path)
    path = docs.dir / "docs" / doc_id("team:t1")
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(StoreError) as caught:
        await docs.update("admit", ["team:t1"], lambda d: ({}, None))
    assert str(path) in str(caught.value) and "delete" in str(caught.value)
