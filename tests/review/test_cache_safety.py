"""The analysis cache in a directory someone else can write to: planted results must not hide
findings, and nothing is written through a planted symbolic link.

Each attack plants an empty result (``[]``: "no findings") for a file with a real finding; the
control shows the same plant hides the finding in a directory the cache trusts.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from agentscope_teams.review.cache import LOG_NAME, AnalysisCache

VULNERABLE = {"app/a.py": "import subprocess\ndef run(cmd):\n    subprocess.run(cmd, shell=True)\n"}
NOBODY = 65534

pytestmark = pytest.mark.anyio


def plant_empty_result(directory: Path) -> Path:
    """An empty result at the name the cache reads for :data:`VULNERABLE`'s file."""
    directory.mkdir(parents=True, exist_ok=True)
    ((path, text),) = VULNERABLE.items()
    planted = directory / f"{AnalysisCache(directory).key(path, text)}.json"
    planted.write_text("[]")
    return planted


async def found(directory: Path) -> int:
    return len((await AnalysisCache(directory).findings(VULNERABLE))["app/a.py"])


async def test_control_a_planted_result_hides_findings_in_a_trusted_directory(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "cache"
    plant_empty_result(directory)
    directory.chmod(0o700)
    assert await found(directory) == 0  # the plant works where the directory is trusted
    assert await found(tmp_path / "fresh") > 0  # and the file does have findings


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
async def test_a_directory_others_can_write_is_not_used(
    tmp_path: Path, mode: int, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "shared"
    planted = plant_empty_result(directory)
    directory.chmod(mode)
    with caplog.at_level(logging.WARNING):
        assert await found(directory) > 0
    assert "is not used" in caplog.text and "writable by its group or by everyone" in caplog.text
    assert sorted(p.name for p in directory.iterdir()) == [planted.name]  # nothing written


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
async def test_a_directory_of_another_user_is_not_used(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    directory = tmp_path / "theirs"
    plant_empty_result(directory)
    directory.chmod(0o755)
    os.chown(directory, NOBODY, NOBODY)
    with caplog.at_level(logging.WARNING):
        assert await found(directory) > 0
    assert f"belongs to user id {NOBODY}" in caplog.text


async def test_a_symlink_to_a_directory_of_another_user_is_not_used(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    plant_empty_result(target)
    target.chmod(0o777)
    link = tmp_path / "cache"
    link.symlink_to(target)
    assert await found(link) > 0


async def test_planted_symlinks_are_never_followed(tmp_path: Path) -> None:
    """In a directory the cache trusts, symbolic links at a result's, a lock's and the log's
    names: the result is not read through its link, nothing is written through any of them."""
    directory = tmp_path / "cache"
    directory.mkdir(mode=0o700)
    outside = tmp_path / "outside"
    outside.mkdir()
    ((path, text),) = VULNERABLE.items()
    key = AnalysisCache(directory).key(path, text)
    planted = outside / "planted.json"
    planted.write_text("[]")
    victim_log = outside / "victim.log"
    victim_log.write_text("precious\n")
    (directory / f"{key}.json").symlink_to(planted)
    (directory / LOG_NAME).symlink_to(victim_log)
    assert await found(directory) > 0  # the planted "no findings" was not read
    assert planted.read_text() == "[]" and victim_log.read_text() == "precious\n"
    assert not (directory / f"{key}.json").is_symlink()  # the result replaced the link

    victim_lock = outside / "victim.lock"
    victim_lock.write_text("keep")
    other = {"app/b.py": "def f(items=[]):\n    return items\n"}
    lock_key = AnalysisCache(directory).key("app/b.py", other["app/b.py"])
    (directory / f"{lock_key}.lock").symlink_to(victim_lock)
    result = await AnalysisCache(directory).findings(other)
    assert result["app/b.py"]  # analysed without the cache
    assert victim_lock.read_text() == "keep"


async def test_entries_are_private(tmp_path: Path) -> None:
    directory = tmp_path / "new" / "cache"
    await found(directory)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    files = [p for p in directory.iterdir() if not p.name.startswith(".")]
    assert {p.suffix for p in files} >= {".json", ".lock", ".jsonl"}
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
