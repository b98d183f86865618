"""Store backends by URL scheme: what :func:`~.url.store_from_url` looks a URL's scheme up in.

A *store opener* is a callable ``opener(url, **options) -> StoreBackend``. The built-in schemes
are registered below; a third-party backend registers its own without editing this package:

* by an entry point in the group ``agentscope_teams.stores`` (name: the scheme, value: the
  opener), declared in the backend's ``pyproject.toml``::

      [project.entry-points."agentscope_teams.stores"]
      tiny = "tiny_store:open_tiny"

* or at run time with :func:`register_store_scheme`.

A URL's scheme is looked up whole (``redis+cluster``), then without its ``+driver`` part
(``postgresql+asyncpg`` -> ``postgresql``). Built-in schemes cannot be taken over by an entry
point (installing a package never changes what ``redis://`` means); :func:`register_store_scheme`
with ``replace=True`` can, on purpose. See ``docs/stores.md``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from ..errors import ConfigurationError
from .base import StoreBackend

log = logging.getLogger(__name__)

#: The entry-point group third-party store backends register their URL scheme in.
ENTRY_POINT_GROUP = "agentscope_teams.stores"

StoreOpener = Callable[..., StoreBackend]

#: Built-in scheme -> the name of its opener in :mod:`.openers` (imported on first use).
_BUILTIN = {
    "memory": "open_memory",
    "file": "open_file",
    "sqlite": "open_sql",
    "postgresql": "open_sql",
    "postgres": "open_sql",
    "mysql": "open_sql",
    "mariadb": "open_sql",
    "redis": "open_redis",
    "rediss": "open_redis",
    "unix": "open_redis",
    "redis+cluster": "open_redis",
    "rediss+cluster": "open_redis",
}
_registered: dict[str, StoreOpener] = {}
_from_entry_points: dict[str, Any] | None = None  # scheme -> EntryPoint, read once


def register_store_scheme(scheme: str, opener: StoreOpener, *, replace: bool = False) -> None:
    """Make ``store_from_url`` open ``scheme://...`` URLs with ``opener(url, **options)``.

    ``ConfigurationError`` when the scheme is already known (built in, by an entry point or
    registered before), unless ``replace`` is True.
    """
    name = _check_scheme(scheme)
    if not callable(opener):
        raise ConfigurationError(f"the opener of store scheme {name!r} must be callable")
    if not replace and name in store_schemes():
        raise ConfigurationError(
            f"store scheme {name!r} is already registered; pass replace=True to take it over"
        )
    _registered[name] = opener


def unregister_store_scheme(scheme: str) -> None:
    """Forget a scheme given to :func:`register_store_scheme` (no-op when it was not)."""
    _registered.pop(scheme.lower(), None)


def store_schemes() -> list[str]:
    """Every scheme ``store_from_url`` knows, sorted: built in, by entry point, registered."""
    return sorted({*_BUILTIN, *_entry_points(), *_registered})


def opener_for(url: str) -> StoreOpener:
    """The opener of ``url``'s scheme; ``ConfigurationError`` listing the known schemes."""
    from .redact import redact_url

    scheme = url.split("://", 1)[0].lower() if "://" in url else ""
    for name in dict.fromkeys((scheme, scheme.split("+", 1)[0])):
        opener = _lookup(name)
        if opener is not None:
            return opener
    known = ", ".join(f"{s}://" for s in store_schemes())
    what = f"its scheme {scheme!r} is not registered" if scheme else "it names no scheme"
    raise ConfigurationError(
        f"unsupported store URL {redact_url(url)!r}: {what}. Known schemes: {known} (e.g. "
        "memory://, file:///path, sqlite:////path, postgresql://user@host/db, "
        "mysql://user@host/db, redis://host:port/db, redis+cluster://host:port[,host:port...]/). "
        f"A third-party backend registers its scheme in the entry-point group "
        f"{ENTRY_POINT_GROUP!r} or with register_store_scheme() (docs/stores.md)"
    )


def _lookup(scheme: str) -> StoreOpener | None:
    if not scheme:
        return None
    if scheme in _registered:
        return _registered[scheme]
    if scheme in _BUILTIN:
        from . import openers

        found: StoreOpener = getattr(openers, _BUILTIN[scheme])
        return found
    ep = _entry_points().get(scheme)
    if ep is None:
        return None
    opener = ep.load()
    if not callable(opener):
        raise ConfigurationError(
            f"the entry point {ep.value!r} of store scheme {scheme!r} ({ENTRY_POINT_GROUP}) is "
            "not callable; it must name a function opener(url, **options) -> store"
        )
    return opener  # type: ignore[no-any-return]


def _entry_points() -> dict[str, Any]:
    global _from_entry_points
    if _from_entry_points is None:
        found: dict[str, Any] = {}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            name = ep.name.lower()
            if name in _BUILTIN:
                log.warning("ignoring entry point %s for the built-in store scheme %r", ep, name)
                continue
            found.setdefault(name, ep)
        _from_entry_points = found
    return _from_entry_points


def _check_scheme(scheme: str) -> str:
    if not isinstance(scheme, str) or not scheme or "://" in scheme or ":" in scheme:
        raise ConfigurationError(
            f"a store scheme is the part of a URL before '://' (e.g. 'tiny'), got {scheme!r}"
        )
    return scheme.lower()
