"""Run ruff and bandit on a batch of sources, in subprocesses, and read their JSON reports.

The sources are written to a private temporary directory (one subdirectory per file, keeping the
file's name, so ``__init__.py`` rules still apply). ruff runs once on the whole batch with the
selection of :mod:`.rulebook` and no project configuration (``--isolated``): the review does not
depend on what the reviewed project configures. bandit then runs once on the files where ruff
found a security check (``S``), to rate its confidence and add the checks ruff has not ported:
bandit costs about 40 ms of CPU per file against ruff's 1 ms, and on the other files every check
it could report is one ruff already ran. Each tool's findings come back as :class:`Hit` s keyed by
the caller's path.

Both engines come with the ``review`` extra (``pip install 'agentscope-teams[review]'``), not with
the core install: :func:`require_engines` raises
:class:`~agentscope_teams.errors.MissingDependencyError` naming it when one is missing.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

import anyio

from ..errors import ConfigurationError, MissingDependencyError
from .findings import Confidence
from .rulebook import BANDIT_SKIP, RUFF_CONFIG, RUFF_IGNORE, RUFF_SELECT

#: bandit check numbers ruff ports as ``S`` rules: their findings come from ruff (see rulebook).
RUFF_PORTED = frozenset(
    (*range(101, 114), 201, 202, *range(301, 325), *range(401, 416), *range(501, 510),
     *range(601, 613), *range(701, 705))
)  # fmt: skip


@dataclass(frozen=True)
class Hit:
    """One finding of an engine: rule code, line, message, and bandit's confidence if any."""

    engine: str
    code: str
    line: int
    message: str
    confidence: Confidence | None = None


def require_engines() -> None:
    """Raise :class:`MissingDependencyError` (extra ``review``) unless ruff and bandit are
    installed in this Python environment (the engines run as ``python -m bandit``)."""
    missing = [name for name in ("ruff", "bandit") if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingDependencyError("the code review (agentscope-teams review)", "review", missing)


def ruff_command() -> list[str]:
    """The ruff binary of the installed ``ruff`` package (else ``python -m ruff``)."""
    try:
        from ruff.__main__ import find_ruff_bin  # type: ignore[import-untyped]

        return [str(find_ruff_bin())]
    except (ImportError, FileNotFoundError):
        found = shutil.which("ruff")
        return [found] if found else [sys.executable, "-m", "ruff"]


def _ruff_args(root: Path) -> list[str]:
    args = [*ruff_command(), "check", "--isolated", "--no-cache", "--preview", "--exit-zero"]
    args += ["--output-format", "json", "--select", ",".join(RUFF_SELECT)]
    args += ["--ignore", ",".join(RUFF_IGNORE)]
    for option in RUFF_CONFIG:
        args += ["--config", option]
    return [*args, str(root)]


def _bandit_args(root: Path, files: list[str]) -> list[str]:
    args = [sys.executable, "-m", "bandit", "-q", "-f", "json", "-s", ",".join(BANDIT_SKIP)]
    return [*args, *(str(root / f) for f in files)]


def _write_batch(sources: Mapping[str, str]) -> tuple[Path, dict[str, str]]:
    """A temporary directory with the sources; (its resolved path, relative path -> caller's path)."""
    root = Path(tempfile.mkdtemp(prefix="agentscope-review-")).resolve()
    where: dict[str, str] = {}
    for i, (path, text) in enumerate(sources.items()):
        target = root / str(i) / Path(path).name
        target.parent.mkdir()
        target.write_text(text, encoding="utf-8")
        where[target.relative_to(root).as_posix()] = path
    return root, where


async def run_engines(sources: Mapping[str, str]) -> dict[str, list[Hit]]:
    """ruff's and bandit's hits per path of ``sources`` (path -> text), one run of each."""
    hits: dict[str, list[Hit]] = {path: [] for path in sources}
    if not sources:
        return hits
    require_engines()
    root, where = await anyio.to_thread.run_sync(_write_batch, sources)
    try:
        outputs: dict[str, bytes] = {}

        async def run(name: str, args: list[str]) -> None:
            # subprocess.run in a worker thread, not an asyncio subprocess: asyncio's child
            # watcher races a Ctrl-C (it logs "Unknown child process" on stderr); a run is short
            done = await anyio.to_thread.run_sync(_run_tool, args, root)
            if done.returncode not in (0, 1):
                err = done.stderr.decode(errors="replace").strip()
                raise ConfigurationError(
                    f"{name} exited with {done.returncode}: {err[-500:]}; "
                    "reinstall the review extra: pip install 'agentscope-teams[review]'"
                )
            outputs[name] = done.stdout

        await run("ruff", _ruff_args(root))
        ruff = [(where.get(_relative(p, root)), h) for p, h in _ruff_hits(outputs["ruff"])]
        flagged = sorted(
            {rel for rel, p in where.items() for q, h in ruff if q == p and h.code[:1] == "S"}
        )
        bandit: list[tuple[str | None, Hit]] = []
        if flagged:
            await run("bandit", _bandit_args(root, flagged))
            bandit = [
                (where.get(_relative(p, root)), h) for p, h in _bandit_hits(outputs["bandit"])
            ]
    finally:
        await anyio.to_thread.run_sync(shutil.rmtree, root, True)
    for path, hit in [*ruff, *bandit]:
        if path is not None:
            hits[path].append(hit)
    return hits


def _run_tool(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(args, capture_output=True, check=False, cwd=cwd)


def _relative(hit_path: str, root: Path) -> str:
    """A tool's path for a file (absolute, or relative to ``root``, its working directory)."""
    pure = PurePath(hit_path)
    if not pure.is_absolute():
        return pure.as_posix()
    try:
        return pure.relative_to(root).as_posix()
    except ValueError:
        return pure.as_posix()


def _report(name: str, raw: bytes) -> Any:
    try:
        return json.loads(raw or b"[]")
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"{name} printed something that is not its JSON report ({exc}); "
            "reinstall agentscope-teams (it depends on ruff and bandit)"
        ) from None


def _ruff_hits(raw: bytes) -> list[tuple[str, Hit]]:
    out: list[tuple[str, Hit]] = []
    for item in _report("ruff", raw):
        code = item.get("code") or "invalid-syntax"
        if code == "invalid-syntax":
            code = "syntax-error"
        line = int((item.get("location") or {}).get("row") or 1)
        out.append((item["filename"], Hit("ruff", code, max(line, 1), item["message"])))
    return out


def _bandit_hits(raw: bytes) -> list[tuple[str, Hit]]:
    out: list[tuple[str, Hit]] = []
    report = _report("bandit", raw)
    for item in report.get("results", []) if isinstance(report, dict) else []:
        number = int(item["test_id"][1:])
        code = f"S{number}" if number in RUFF_PORTED else item["test_id"]
        confidence = Confidence(str(item["issue_confidence"]).lower())
        hit = Hit("bandit", code, int(item["line_number"]), item["issue_text"], confidence)
        out.append((item["filename"], hit))
    return out
