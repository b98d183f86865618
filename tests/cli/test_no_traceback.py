"""The command line never prints a traceback: bad models, missing drivers, store URLs, empty reviews.

Each case runs the real console script and expects exactly one ``error: ...`` line on stderr.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams.cli import main, sessions_cmd

from .conftest import REPO, Cli, one_error_line

SPECS = str(REPO / "specs")


# -- --model python:module:attribute ------------------------------------------------------------

BROKEN_MODULE = "raise RuntimeError('broken at import')\n"
FACTORY = """
def failing():
    raise TypeError("factory needs an argument")

not_a_model = 42
"""


@pytest.fixture
def pymodels(tmp_path: Path) -> Path:
    """A directory on PYTHONPATH with a module that fails at import and one with bad factories."""
    root = tmp_path / "pymodels"
    root.mkdir()
    (root / "broken_models.py").write_text(BROKEN_MODULE)
    (root / "bad_models.py").write_text(FACTORY)
    return root


def run_with_model(cli: Cli, command: str, model: str, pythonpath: Path) -> tuple[int, str]:
    if command == "run":
        args = ["run", "--specs", SPECS, "--model", model, "hello"]
    else:
        args = ["worker", "--specs", SPECS, "--model", model]
    result = cli.run(*args, "--store", cli.url, PYTHONPATH=str(pythonpath))
    return result.returncode, one_error_line(result)


@pytest.mark.parametrize("command", ["run", "worker"])
@pytest.mark.parametrize(
    ("model", "names"),
    [
        ("python:no_such_module:attr", ["no_such_module"]),
        ("python:json:nope", ["json", "nope"]),
        ("python:broken_models:model", ["broken_models", "broken at import"]),
        ("python:bad_models:failing", ["bad_models:failing", "factory needs an argument"]),
        ("python:bad_models:not_a_model", ["bad_models:not_a_model", "int"]),
        ("python:json", ["python:package.module:attribute"]),
    ],
    ids=["no-module", "no-attribute", "import-fails", "factory-fails", "not-a-model", "malformed"],
)
def test_a_python_model_that_cannot_load_is_one_error_line(
    cli: Cli, pymodels: Path, command: str, model: str, names: list[str]
) -> None:
    code, line = run_with_model(cli, command, model, pymodels)
    assert code == 1
    for name in names:
        assert name in line, line


# -- any exception becomes one line ------------------------------------------------------------


@pytest.mark.parametrize(
    "exc",
    [RuntimeError("boom"), ImportError("no module named zz"), AssertionError("oops")],
    ids=["runtime", "import", "assertion"],
)
def test_an_unexpected_exception_is_one_line_and_debug_adds_the_traceback(
    exc: Exception, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def failing(*args: object) -> int:
        raise exc

    monkeypatch.setattr(sessions_cmd, "with_store", failing)
    assert main(["sessions", "list", "--store", "memory://"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert type(exc).__name__ in err and str(exc) in err and "--debug" in err

    assert main(["--debug", "sessions", "list", "--store", "memory://"]) == 1
    debug = capsys.readouterr().err
    assert "Traceback (most recent call last)" in debug
    assert debug.splitlines()[-1] == err.strip()


def test_several_errors_at_once_are_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def failing(*args: object) -> int:
        raise ExceptionGroup("task group", [ValueError("first"), RuntimeError("second")])

    monkeypatch.setattr(sessions_cmd, "with_store", failing)
    assert main(["sessions", "list", "--store", "memory://"]) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert "first" in err and "1 more" in err


# -- missing optional drivers: everything named at once -----------------------------------------

BLOCKER = """
import os, sys
for name in os.environ.get("BLOCK_MODULES", "").split(","):
    if name:
        sys.modules[name] = None
"""


@pytest.mark.parametrize(
    ("url", "blocked", "extra"),
    [
        ("postgresql://u@127.0.0.1:1/db", ["sqlalchemy", "asyncpg"], "postgres"),
        ("postgresql://u@127.0.0.1:1/db", ["asyncpg", "greenlet"], "postgres"),
        ("mysql://u@127.0.0.1:1/db", ["sqlalchemy", "asyncmy"], "mysql"),
        ("sqlite:///{tmp}/x.db", ["sqlalchemy", "aiosqlite"], "sql"),
        ("redis://127.0.0.1:1/0", ["redis"], "redis"),
    ],
    ids=["postgres", "postgres-greenlet", "mysql", "sqlite", "redis"],
)
def test_a_missing_driver_names_every_missing_package_at_once(
    cli: Cli, tmp_path: Path, url: str, blocked: list[str], extra: str
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(BLOCKER)
    result = cli.run(
        "sessions", "list", "--store", url.format(tmp=tmp_path),
        PYTHONPATH=str(site), BLOCK_MODULES=",".join(blocked),
    )  # fmt: skip
    assert result.returncode == 1
    line = one_error_line(result)
    for name in blocked:
        assert name in line, line
    assert f"pip install 'agentscope-teams[{extra}]'" in line


# -- file-backed store URLs ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "right_form"),
    [
        ("file://relative/path", "file:///"),
        ("file://host/abs/path", "file:///"),
        ("sqlite://host/x.db", "sqlite:////"),
    ],
)
def test_an_ambiguous_file_backed_url_is_refused_with_the_right_form(
    cli: Cli, tmp_path: Path, url: str, right_form: str
) -> None:
    result = cli.run("sessions", "list", "--store", url, cwd=tmp_path)
    assert result.returncode == 1
    line = one_error_line(result)
    assert right_form in line and ("./" in line or url.startswith("sqlite")), line
    assert [p.name for p in tmp_path.iterdir() if p.name != "home"] == []  # nothing created


@pytest.mark.parametrize(
    ("url", "created"),
    [("file://./data", "data"), ("sqlite:///./data.db", "data.db"), ("sqlite:///d.db", "d.db")],
)
def test_an_explicitly_relative_url_is_relative_to_the_working_directory(
    cli: Cli, tmp_path: Path, url: str, created: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    result = cli.run("sessions", "list", "--store", url, cwd=work)
    assert result.returncode == 0, result.stderr
    assert (work / created).exists()


# -- a review with nothing to review ------------------------------------------------------------


@pytest.mark.parametrize("layout", ["empty", "no-python", "only-hidden-or-venv"])
def test_reviewing_a_directory_without_python_files_says_so(
    cli: Cli, tmp_path: Path, layout: str
) -> None:
    target = tmp_path / "target"
    target.mkdir()
    if layout == "no-python":
        (target / "README.md").write_text("# docs only\n")
    elif layout == "only-hidden-or-venv":
        for sub in (".git", ".venv/lib", "site-packages"):
            (target / sub).mkdir(parents=True)
            (target / sub / "x.py").write_text("import os\n")
    out = tmp_path / "review.md"
    result = cli("review", str(target), "--output", str(out))
    assert result.returncode == 1
    line = one_error_line(result)
    assert "nothing to review" in line and "no Python files" in line and str(target) in line
    assert not out.exists()
    assert result.stdout == ""


def test_a_sqlite_file_that_cannot_be_opened_is_one_error_line(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "a-folder.db"
    folder.mkdir()  # the database "file" is a folder: SQLite cannot open it
    result = cli.run("sessions", "list", "--user", "a", "--store", f"sqlite:///{folder}")
    assert result.returncode == 1
    line = one_error_line(result)  # before: aiosqlite's worker thread printed a traceback too
    assert str(folder) in line and "unable to open database file" in line, line
