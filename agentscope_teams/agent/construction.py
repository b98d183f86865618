"""Building a :class:`~.harness.SessionAgent`: its store, and the checks that refuse, at
construction, numbers and deployments that cannot work (before the first call, not during it)."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigurationError
from ..store.base import BaseStore, StoreBackend
from ..store.capabilities import capabilities_of

DEFAULT_STORE_DIR = Path.home() / ".agentscope_teams" / "store"


def resolve_store(store: BaseStore | str | None) -> BaseStore:
    """``store`` itself, a store built from a URL, or (None) the default file store."""
    if store is None:
        from ..store.jsonfile import JsonFileStore

        return JsonFileStore(DEFAULT_STORE_DIR)
    if isinstance(store, str):
        from ..store.url import store_from_url

        return store_from_url(store)
    return store


def check_numbers(replicas: int, lease_ttl: float, busy_timeout: float) -> None:
    """Refuse replica counts and durations that cannot work."""
    if replicas < 1:
        raise ConfigurationError(f"replicas must be >= 1, got {replicas}")
    if not lease_ttl > 0:
        raise ConfigurationError(f"lease_ttl must be > 0 seconds, got {lease_ttl!r}")
    if not busy_timeout >= 0:
        raise ConfigurationError(f"busy_timeout must be >= 0 seconds, got {busy_timeout!r}")


def check_deployment(store: BaseStore, replicas: int, remote_workspace: bool) -> None:
    """Refuse, at construction, configurations that cannot work across replicas."""
    kind = type(store).__name__
    if not isinstance(store, StoreBackend) and not isinstance(store, BaseStore):
        raise ConfigurationError(f"store must implement BaseStore, got {kind}")
    shared_hosts = capabilities_of(store).shared_across_hosts
    if replicas > 1 and not shared_hosts:
        raise ConfigurationError(
            f"replicas={replicas} needs a store shared across hosts, but {kind} is local to one "
            "host; use RedisStore or SqlStore (e.g. store='redis://host:6379/0')"
        )
    if remote_workspace and not shared_hosts:
        raise ConfigurationError(
            f"a remote/shared workspace is reachable from several hosts but {kind} is not; "
            "use RedisStore or SqlStore so every host sees the same state"
        )
