"""How :class:`~agentscope_teams.store.redis.RedisStore` gets its client, checks its options and
its URL, and finds the key registry's slot grouping.

A URL's query options are checked before any connection is made: an option redis-py's connection
does not take is refused by name (redis-py would raise a ``TypeError`` at the first command), and a
database that is not a number from 0 up (``/-1``, ``/abc``, which redis-py would read as
database 0) is refused at once; a database number the server does not have is
reported by ``setup()`` (:func:`db_refused`). A ``redis+cluster://`` URL takes no query options.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote, urlsplit

from ..errors import ConfigurationError, MissingDependencyError
from .redact import redact_text, redact_url

if TYPE_CHECKING:
    from redis.asyncio import Redis

DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_MAX_CONNECTIONS = 64
#: The entry-point group that provides the default ``key_groups`` (see :func:`default_key_groups`).
KEY_GROUPS_ENTRY_POINT = "agentscope_teams.key_groups"
#: The public form of an unreachable Redis (see :func:`~agentscope_teams.errors.public_message`).
UNREACHABLE = "the {} store cannot be reached; the server's log names the cause"
#: Query options handled by the connection pool rather than by the connection.
_POOL_OPTIONS = frozenset({"max_connections", "connection_class"})


def load_redis() -> Any:
    """The ``redis`` package; MissingDependencyError naming the extra when it is absent."""
    try:
        import redis.asyncio
        import redis.exceptions
    except ImportError as exc:
        raise MissingDependencyError("RedisStore", "redis") from exc
    return redis


class NoTurn:
    """The gate of an injected single-server client: its own pool decides how callers wait."""

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


_NO_TURN = NoTurn()


def no_turn(reserve: bool = False) -> NoTurn:
    return _NO_TURN


def default_key_groups() -> dict[str, int]:
    """The key registry's slot grouping, from the ``agentscope_teams.key_groups`` entry points
    (``agentscope_teams.keys.slot_groups`` for this package): read when a cluster store is built,
    so the layout never depends on which modules were imported first."""
    groups: dict[str, int] = {}
    found = entry_points(group=KEY_GROUPS_ENTRY_POINT)
    for ep in found:
        for literal, size in cast(Mapping[str, int], ep.load()()).items():
            if groups.setdefault(literal, size) != size:
                raise ConfigurationError(
                    f"the key literal {literal!r} has two slot group sizes in the entry points "
                    f"of {KEY_GROUPS_ENTRY_POINT!r}; pass key_groups= to RedisStore"
                )
    if not found:
        raise ConfigurationError(
            f"no {KEY_GROUPS_ENTRY_POINT!r} entry point is installed, so a Redis Cluster store "
            "cannot lay out the framework's keys; reinstall agentscope-teams (pip install -e . "
            "for a checkout) or pass key_groups=agentscope_teams.keys.slot_groups()"
        )
    return groups


def check_key_groups(groups: Mapping[str, int]) -> dict[str, int]:
    """``groups`` as a dict; ConfigurationError for a size that is not an int >= 1."""
    for literal, size in groups.items():
        if not isinstance(literal, str) or not isinstance(size, int) or size < 1:
            raise ConfigurationError(
                f"key_groups maps a key literal to its group size (an int >= 1), got "
                f"{literal!r}: {size!r}"
            )
    return dict(groups)


def check_options(namespace: str, hash_tag_segments: int) -> None:
    if not isinstance(namespace, str) or not namespace or any(c in namespace for c in "{}"):
        raise ConfigurationError(
            f"Redis namespace {namespace!r} must be a non-empty string without '{{' or '}}'"
        )
    if not isinstance(hash_tag_segments, int) or hash_tag_segments < 1:
        raise ConfigurationError(
            f"hash_tag_segments must be an int >= 1, got {hash_tag_segments!r}"
        )


def check_pool(max_connections: int, pool_timeout: float) -> None:
    if not isinstance(max_connections, int) or max_connections < 1:
        raise ConfigurationError(f"max_connections must be an int >= 1, got {max_connections!r}")
    if not pool_timeout > 0:
        raise ConfigurationError(f"pool_timeout must be > 0 seconds, got {pool_timeout!r}")


def invalid_url(url: str, exc: ValueError) -> ConfigurationError:
    """The error of a Redis URL redis-py cannot parse (the password redacted)."""
    return ConfigurationError(
        f"invalid Redis URL {redact_url(url)!r} ({redact_text(str(exc), url)}); "
        "use redis://[user:password@]host:port/db"
    )


def check_url(redis: Any, url: str) -> None:
    """Refuse a query option the connection does not take, and a negative database number."""
    try:
        kwargs = redis.asyncio.connection.parse_url(url)
    except ValueError as exc:
        raise invalid_url(url, exc) from exc
    known = _connection_options(kwargs.get("connection_class", redis.asyncio.Connection))
    unknown = sorted(k for k in kwargs if k not in known and k not in _POOL_OPTIONS)
    if unknown:
        raise ConfigurationError(
            f"Redis URL {redact_url(url)!r} has unknown query option(s) {', '.join(unknown)}; "
            "use the options of redis-py's connection (socket_timeout, health_check_interval, "
            "ssl_cert_reqs, ...)"
        )
    db = kwargs.get("db", 0)
    path = _db_path(url)
    if path is not None and not path.removeprefix("-").isdigit():
        db = path  # redis-py skips such a path and would select database 0
    if not isinstance(db, int) or db < 0:
        raise ConfigurationError(
            f"Redis URL {redact_url(url)!r} names database {db!r}; a database is a number from 0 "
            "to the server's `databases` setting minus one (0 to 15 by default)"
        )


def _db_path(url: str) -> str | None:
    """The database a ``redis://`` or ``rediss://`` URL's path names (None: no path, or a
    ``unix://`` URL, whose path is the socket's)."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in ("redis", "rediss"):
        return None
    path = unquote(parts.path).removeprefix("/")
    return path or None


def _connection_options(connection_class: type) -> set[str]:
    """The keyword arguments a redis-py connection class takes (every ``__init__`` of its MRO)."""
    names: set[str] = set()
    for klass in connection_class.__mro__[:-1]:
        init = vars(klass).get("__init__")
        if init is not None:
            names.update(
                p.name
                for p in inspect.signature(init).parameters.values()
                if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and p.name != "self"
            )
    return names


def db_refused(where: str, db: int, exc: BaseException) -> ConfigurationError:
    """The error of a server that refused to ``SELECT`` the URL's database."""
    return ConfigurationError(
        f"Redis at {where} refused database {db} ({exc}); a database is a number from 0 to the "
        "server's `databases` setting minus one (0 to 15 by default): fix the /db of the URL"
    )


def client_from_url(
    redis: Any, url: str, max_connections: int, pool_timeout: float, lean: bool = True
) -> Redis:
    """A client on a plain connection pool; the store's gate bounds its operations.

    The pool itself is unbounded so that it never fails with "Too many connections": the store's
    gate keeps its operations at ``max_connections`` (callers past it wait up to ``pool_timeout``;
    the board queue's own commands take turns too, see :meth:`RedisStore.commands`), and the signal
    subscriber adds one connection. Measured (``python -m bench redis_pool``, 1,000 concurrent
    tasks): a blocking pool of 64, 256 or 1,024 costs the same client CPU, i.e. its
    per-acquisition condition and timeout, not waiting; the gated plain pool avoids that cost.
    Replies are parsed by ``hiredis`` when installed (the ``redis`` extra installs it). The client
    sends its script calls and hot single commands on a lean path (:mod:`._redis_lean`) when the
    installed redis-py has what that path reads (:func:`._redis_lean.fits`); with ``lean=False``
    (the baseline of ``python -m bench redis_lean``) or an older redis-py, redis-py's own.
    """
    check_pool(max_connections, pool_timeout)
    check_url(redis, url)
    try:
        pool = redis.asyncio.ConnectionPool.from_url(url, socket_connect_timeout=5)
        pool.connection_class = timer_send(redis, pool.connection_class)
        from ._redis_lean import LeanRedis, fits  # imports redis-py, an optional dependency

        lean = lean and fits(pool)
        return (LeanRedis if lean else redis.asyncio.Redis).from_pool(pool)
    except ValueError as exc:
        raise invalid_url(url, exc) from exc


class _TimerSend:
    """redis-py's ``send_packed_command`` with its socket timeout as ``asyncio.timeout`` (one timer)
    instead of ``asyncio.wait_for``, which on Python 3.11 wraps every write in a task of its own:
    a task, two futures and their callbacks per command, all of it garbage for the collector at
    1,000 concurrent calls (``bench/RESULTS.md``, h-cpu2). Errors are redis-py's: the write runs
    its own code, with the timeout lifted for its duration; a write that times out disconnects
    and raises ``redis.exceptions.TimeoutError`` as redis-py's does. A write that first connects
    or checks the connection's health (their replies are read under the socket timeout) takes
    redis-py's path unchanged."""

    socket_timeout: float | None
    _timeout_error: type[Exception]

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        timeout = self.socket_timeout
        if (
            not timeout
            or not self.is_connected  # type: ignore[attr-defined]
            or (check_health and self.health_check_interval)  # type: ignore[attr-defined]
        ):  # a connect or a health check (a handshake, a PING read): redis-py's own path
            await super().send_packed_command(command, check_health)  # type: ignore[misc]
            return
        self.socket_timeout = None  # read by nothing else while this connection writes
        try:
            async with asyncio.timeout(timeout):
                await super().send_packed_command(command, False)  # type: ignore[misc]
        except TimeoutError:
            await self.disconnect(nowait=True)  # type: ignore[attr-defined]
            raise self._timeout_error("Timeout writing to socket") from None
        finally:
            self.socket_timeout = timeout


def timer_send(redis: Any, connection_class: type) -> type:
    """``connection_class`` sending as :class:`_TimerSend` does (a subclass of it)."""
    if issubclass(connection_class, _TimerSend):
        return connection_class
    return type(
        connection_class.__name__,
        (_TimerSend, connection_class),
        {"_timeout_error": redis.exceptions.TimeoutError, "__module__": __name__},
    )


def describe(client: Redis) -> str:
    """A password-free description of where an injected client connects."""
    kw = client.connection_pool.connection_kwargs
    if "path" in kw:
        return f"unix://{kw['path']}"
    return f"redis://{kw.get('host', 'localhost')}:{kw.get('port', 6379)}/{kw.get('db', 0)}"
