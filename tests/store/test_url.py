"""``store_from_url``: scheme dispatch, options, clear errors and password redaction."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import anyio
import pytest

import agentscope_teams.store as store_pkg
from agentscope_teams.errors import (
    ConfigurationError,
    MissingDependencyError,
    StoreUnavailableError,
)
from agentscope_teams.store import Entry, redact_url, store_from_url
from agentscope_teams.store.redact import redact_text
from agentscope_teams.store.url import (
    SUPPORTED_SCHEMES,
    file_store_path,
    require_drivers,
    sqlite_url,
)

SECRET = "hunter2-s3cret"

SCHEMES = [
    ("memory://", "memory", "InMemoryStore"),
    ("file://{tmp}/files", "jsonfile", "JsonFileStore"),
    ("sqlite:///{tmp}/store.db", "sql", "SqlStore"),
    ("sqlite+aiosqlite:///{tmp}/store.db", "sql", "SqlStore"),
    ("postgresql://user@127.0.0.1:5432/db", "sql", "SqlStore"),
    ("postgres://user@127.0.0.1:5432/db", "sql", "SqlStore"),
    ("postgresql+asyncpg://user@127.0.0.1:5432/db", "sql", "SqlStore"),
    ("mysql://user@127.0.0.1:3306/db", "sql", "SqlStore"),
    ("mariadb://user@127.0.0.1:3306/db", "sql", "SqlStore"),
    ("mysql+asyncmy://user@127.0.0.1:3306/db", "sql", "SqlStore"),
    ("redis://127.0.0.1:6379/0", "redis", "RedisStore"),
    ("rediss://127.0.0.1:6380/0", "redis", "RedisStore"),
]


@pytest.mark.parametrize(("template", "module", "cls"), SCHEMES, ids=[s[0] for s in SCHEMES])
async def test_scheme_builds_its_backend(
    template: str, module: str, cls: str, tmp_path: Path
) -> None:
    expected = getattr(importlib.import_module(f"agentscope_teams.store.{module}"), cls)
    store = store_from_url(template.format(tmp=tmp_path), max_value_bytes=1234)
    try:
        assert isinstance(store, expected)
        assert store.max_value_bytes == 1234
    finally:
        await store.aclose()


async def test_file_url_with_relative_path_uses_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    async with store_from_url("file://./data") as store:
        await store.put(("k",), b"v")
        assert await store.get(("k",)) == Entry(b"v", 1)
    assert [p for p in (tmp_path / "data").rglob("*") if p.is_file()], (
        "nothing written under ./data"
    )


def test_file_url_without_a_path_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="file"):
        store_from_url("file://")


@pytest.mark.parametrize(
    "url", ["ftp://host/x", "mongodb://host/db", "/just/a/path", "", "memcache://h", "s3://b/k"]
)
def test_unknown_scheme_lists_supported_schemes(url: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        store_from_url(url)
    message = str(info.value)
    for form in SUPPORTED_SCHEMES:
        assert form.split("://")[0] + "://" in message, form


def test_unknown_scheme_error_redacts_the_password() -> None:
    with pytest.raises(ConfigurationError) as info:
        store_from_url(f"ftp://alice:{SECRET}@host/x")
    assert SECRET not in str(info.value)
    assert "alice:***@host" in str(info.value)


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("redis://:pw@host:6379/0", "redis://:***@host:6379/0"),
        ("postgresql://user:pw@host/db", "postgresql://user:***@host/db"),
        ("mysql+asyncmy://root:p%40ss%2Fw@h:3306/db", "mysql+asyncmy://root:***@h:3306/db"),
        ("rediss://u:pa:ss@h/0", "rediss://u:***@h/0"),
        ("redis://host:6379/0", "redis://host:6379/0"),
        ("postgresql://user@host/db", "postgresql://user@host/db"),
        ("sqlite:///tmp/x.db", "sqlite:///tmp/x.db"),
        ("memory://", "memory://"),
    ],
)
def test_redact_url(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


def exception_chain(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in chain:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    return chain


@pytest.mark.parametrize(
    "url",
    [
        f"redis://:{SECRET}@127.0.0.1:1/0",
        f"postgresql://user:{SECRET}@127.0.0.1:1/db",
        f"mysql://user:{SECRET}@127.0.0.1:1/db",
    ],
    ids=["redis", "postgres", "mysql"],
)
async def test_unreachable_server_error_names_host_without_password(url: str) -> None:
    with anyio.fail_after(120), pytest.raises(StoreUnavailableError) as info:  # hang guard only
        async with store_from_url(url) as store:
            await store.get(("k",))
    assert "127.0.0.1:1" in str(info.value)
    for exc in exception_chain(info.value):
        assert SECRET not in str(exc), f"password leaked by {type(exc).__name__}: {exc}"
        assert SECRET not in repr(exc), f"password leaked by {type(exc).__name__}: {exc!r}"


@pytest.mark.parametrize(
    ("url", "blocked", "backend_module", "extra"),
    [
        ("redis://127.0.0.1:6379/0", "redis", "redis", "redis"),
        ("sqlite:///{tmp}/x.db", "sqlalchemy", "sql", "sql"),
        ("sqlite:///{tmp}/x.db", "aiosqlite", "sql", "sql"),
        ("postgresql://u@127.0.0.1:5432/db", "asyncpg", "sql", "postgres"),
        ("mysql://u@127.0.0.1:3306/db", "asyncmy", "sql", "mysql"),
    ],
    ids=["redis", "sqlalchemy", "aiosqlite", "asyncpg", "asyncmy"],
)
async def test_missing_driver_names_the_extra(
    url: str,
    blocked: str,
    backend_module: str,
    extra: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Pretend the driver is not installed, and make the backend module import afresh.
    for name in [n for n in sys.modules if n == blocked or n.startswith(blocked + ".")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, blocked, None)
    full = f"agentscope_teams.store.{backend_module}"
    if full in sys.modules:
        monkeypatch.setattr(store_pkg, backend_module, sys.modules[full], raising=False)
        monkeypatch.delitem(sys.modules, full)

    with anyio.fail_after(60), pytest.raises(MissingDependencyError) as info:  # hang guard only
        async with store_from_url(url.format(tmp=tmp_path)) as store:
            await store.get(("k",))
    assert info.value.extra == extra
    assert f"pip install 'agentscope-teams[{extra}]'" in str(info.value)


# -- file-backed URLs: one rule -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("file:///srv/store", "/srv/store"),
        ("file:///srv/with%20space", "/srv/with space"),
        ("file://./store", "{cwd}/store"),
        ("file://../store", "{parent}/store"),
        ("file://~/store", "{home}/store"),
    ],
)
def test_file_urls_name_an_absolute_directory(
    url: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = file_store_path(url)
    assert path.is_absolute()
    assert path == Path(expected.format(cwd=work, parent=tmp_path, home=tmp_path / "home"))


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("sqlite:////srv/x.db", "sqlite:////srv/x.db"),
        ("sqlite+aiosqlite:////srv/x.db?timeout=5", "sqlite+aiosqlite:////srv/x.db?timeout=5"),
        ("sqlite:///./x.db", "sqlite:///{cwd}/x.db"),
        ("sqlite:///~/x.db", "sqlite:///{home}/x.db"),
    ],
)
def test_sqlite_urls_are_made_absolute(
    url: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert sqlite_url(url) == expected.format(cwd=tmp_path, home=tmp_path / "home")


@pytest.mark.parametrize(
    ("url", "forms"),
    [
        ("file://relative/dir", ["file:///absolute/path/relative/dir", "file://./relative/dir"]),
        ("file://host/srv/x", ["file:///absolute/path/host/srv/x", "file://./host/srv/x"]),
        ("file://~nosuchuser12345/x", ["file:///absolute/path/~nosuchuser12345/x"]),
        ("sqlite://host/x.db", ["sqlite:////absolute/path/host/x.db", "sqlite:///host/x.db"]),
    ],
)
def test_an_ambiguous_file_backed_url_is_refused_with_the_forms_to_use(
    url: str, forms: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError) as info:
        store_from_url(url)
    for form in forms:
        assert form in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing created


@pytest.mark.parametrize(
    ("url", "blocked", "extra"),
    [
        ("postgresql://u@h/db", ["sqlalchemy", "asyncpg"], "postgres"),
        ("mariadb://u@h/db", ["greenlet", "asyncmy"], "mysql"),
        ("sqlite:////tmp/x.db", ["sqlalchemy", "greenlet", "aiosqlite"], "sql"),
        ("rediss://h/0", ["redis"], "redis"),
    ],
)
def test_every_missing_driver_is_named_at_once(
    url: str, blocked: list[str], extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in blocked:
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(MissingDependencyError) as info:
        require_drivers(url)
    assert info.value.extra == extra and list(info.value.missing) == blocked
    assert f"needs {', '.join(blocked)}, not installed" in str(info.value)


def test_a_named_driver_is_left_to_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "asyncpg", None)
    require_drivers("postgresql+psycopg://u@h/db")  # psycopg is the user's choice: not checked
    with pytest.raises(MissingDependencyError, match="asyncpg"):
        require_drivers("postgresql://u@h/db")


@pytest.mark.parametrize(
    ("url", "redacted"),
    [
        ("redis://h:6379/0?password=pw&db=1", "redis://h:6379/0?password=***&db=1"),
        (
            "postgresql://u@h/db?sslpassword=pw&sslmode=require",
            "postgresql://u@h/db?sslpassword=***&sslmode=require",
        ),
        ("mysql://root@h/db?passwd=pw", "mysql://root@h/db?passwd=***"),
        ("redis://h/0?token=pw#x", "redis://h/0?token=***#x"),
        ("redis://h/0?AUTH=pw;Api-Key=k", "redis://h/0?AUTH=***;Api-Key=***"),
        ("postgresql://u:p@ss@word@h/db", "postgresql://u:***@h/db"),
        ("redis://:se/cret@h/0", "redis://:***@h/0"),
        ("redis+cluster://u:pw@h1:1,h2:2/", "redis+cluster://u:***@h1:1,h2:2/"),
        ("redis+cluster://u:a@h1:1,u:b@h2:2/", "redis+cluster://u:***@h1:1,u:***@h2:2/"),
        ("redis://h/0?prefix=a@b", "redis://h/0?prefix=a@b"),
    ],
)
def test_redact_url_hides_every_credential_form(url: str, redacted: str) -> None:
    assert redact_url(url) == redacted


def test_redact_text_hides_the_pieces_a_driver_quotes() -> None:
    # SQLAlchemy reads u:p@ss@word@h as password "p", host "ss@word@h": its message quotes the host.
    url = "mysql://root:p@Zq9secret@127.0.0.1/x?password=Other-secret"
    message = "Can't connect to MySQL server on 'Zq9secret@127.0.0.1' (password Other-secret)"
    redacted = redact_text(message, url)
    assert "Zq9secret" not in redacted and "Other-secret" not in redacted
    assert "127.0.0.1" in redacted
