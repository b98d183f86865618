"""``AnalysisCache``: one analysis per file, for concurrent members and for several processes."""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter
from pathlib import Path

import anyio
import pytest

from agentscope_teams.review import cache as cache_module
from agentscope_teams.review.cache import LOG_NAME, AnalysisCache, default_cache_dir

SOURCES = {
    "app/a.py": "import subprocess\ndef run(cmd):\n    subprocess.run(cmd, shell=True)\n",
    "app/b.py": "def f(items=[]):\n    return items\n",
    "app/c.py": "x = 1\n",
}


def logged(directory: Path) -> Counter[str]:
    lines = (directory / LOG_NAME).read_text().splitlines()
    return Counter(p for line in lines for p in json.loads(line)["paths"])


@pytest.mark.anyio
@pytest.mark.parametrize("on_disk", [False, True])
async def test_concurrent_members_share_one_analysis_per_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, on_disk: bool
) -> None:
    analysed: list[str] = []
    real = cache_module.analyze_sources

    async def counting(sources: dict[str, str]):  # type: ignore[no-untyped-def]
        analysed.extend(sources)
        return await real(sources)

    monkeypatch.setattr(cache_module, "analyze_sources", counting)
    cache = AnalysisCache(tmp_path / "cache" if on_disk else None)
    results: list[dict[str, object]] = []

    async def member(paths: list[str]) -> None:
        results.append(await cache.findings({p: SOURCES[p] for p in paths}))

    async with anyio.create_task_group() as tg:
        for _ in range(3):  # three members, the same group of files
            tg.start_soon(member, ["app/a.py", "app/b.py"])
        tg.start_soon(member, ["app/b.py", "app/c.py"])
    assert sorted(analysed) == ["app/a.py", "app/b.py", "app/c.py"]
    assert all(r["app/b.py"] == results[0]["app/b.py"] for r in results)
    again = await cache.findings({"app/a.py": SOURCES["app/a.py"]})
    assert [f.rule for f in again["app/a.py"]] == ["S602"] and len(analysed) == 3


@pytest.mark.anyio
async def test_a_changed_file_is_analysed_again(tmp_path: Path) -> None:
    cache = AnalysisCache(tmp_path)
    await cache.findings({"m.py": "x = 1\n"})
    changed = await cache.findings({"m.py": "def f(a=[]):\n    return a\n"})
    assert [f.rule for f in changed["m.py"]] == ["B006"]
    assert logged(tmp_path) == Counter({"m.py": 2})


def _worker(directory: str, paths: list[str], out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    async def main() -> dict[str, list[str]]:
        found = await AnalysisCache(Path(directory)).findings({p: SOURCES[p] for p in paths})
        return {p: [f.rule for f in fs] for p, fs in found.items()}

    out.put(anyio.run(main))


def test_processes_sharing_a_directory_analyse_each_file_once(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    groups = [list(SOURCES), list(SOURCES), ["app/b.py", "app/a.py"], ["app/c.py"]]
    procs = [ctx.Process(target=_worker, args=(str(tmp_path), g, queue)) for g in groups]
    for p in procs:
        p.start()
    answers = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert logged(tmp_path) == Counter({p: 1 for p in SOURCES})
    full = [a for a in answers if len(a) == 3]
    assert len(full) == 2 and full[0] == full[1]
    assert full[0] == {"app/a.py": ["S602"], "app/b.py": ["B006"], "app/c.py": []}


def test_the_cache_directory_follows_the_environment(tmp_path: Path) -> None:
    assert default_cache_dir({"AGENTSCOPE_TEAMS_REVIEW_CACHE": str(tmp_path)}) == tmp_path
    xdg = default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)})
    assert xdg == tmp_path / "agentscope_teams" / "review"
