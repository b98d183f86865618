""":class:`SdkChatModel`: what the models built on a provider's official SDK share.

The endpoint and key are resolved from the arguments or the provider's environment variables
(:mod:`.providers`), one :class:`~.model_errors.ErrorMapper` turns the SDK's failures into
:class:`~agentscope_teams.errors.ModelError` subclasses, and one SDK client (its connection pool) is
closed by :meth:`SdkChatModel.aclose` or ``async with``. :meth:`SdkChatModel._send` sends a request
with the SDK's retries, or, in a call a shared rate limit governs, through :mod:`.retries`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

from ..errors import ModelConfigurationError
from .model_errors import ErrorMapper
from .providers import Provider, resolve_api_key, resolve_base_url
from .retries import gate_for, governed_call

T = TypeVar("T")


class _SdkClient(Protocol):
    async def close(self) -> None: ...

    def with_options(self, *, max_retries: int) -> Any: ...


class SdkChatModel:
    """The shared part of ``OpenAIChatModel`` and ``AnthropicChatModel``: ``__init__`` checks the
    model id, ``max_retries`` and ``timeout`` and resolves the endpoint and key; the subclass then
    sets ``_client`` (an SDK client with ``close()``)."""

    _client: _SdkClient
    #: ``_client`` with the SDK's retries off (made at the first governed call; same pool).
    _once: Any = None
    #: Whether :meth:`warm` ran.
    _warmed = False

    def __init__(
        self,
        model: str,
        *,
        provider: Provider,
        label: str,
        api_key: str | None,
        base_url: str | None,
        max_retries: int,
        timeout: float,
        mapper: type[ErrorMapper],
    ) -> None:
        if not model.strip():
            raise ModelConfigurationError(f"empty model id for provider {label!r}")
        if max_retries < 0:
            raise ModelConfigurationError(
                f"{label} model {model!r}: max_retries must be >= 0, got {max_retries!r}"
            )
        if timeout <= 0:
            raise ModelConfigurationError(
                f"{label} model {model!r}: timeout must be > 0 seconds, got {timeout!r}"
            )
        self.model, self.provider = model, label
        self.max_retries, self.timeout = max_retries, timeout
        self.base_url = resolve_base_url(provider, model, base_url)
        key_hint = "the api_key argument" if api_key is not None else provider.key_env
        self._api_key = resolve_api_key(provider, model, api_key)
        self._errors = mapper(
            model=model,
            provider=label,
            base_url=self.base_url,
            api_key=self._api_key,
            key_hint=key_hint,
            base_url_env=provider.base_url_env,
            timeout=timeout,
        )

    async def _send(self, send: Callable[[Any], Awaitable[T]]) -> T:
        """``send(client)``: with the SDK client and its retries, or, when a shared rate limit
        governs this call (:func:`.retries.gate_for`), with them off and retried through the
        limiter (:func:`.retries.governed_call`); a failure left becomes a ModelError."""
        gate = gate_for(self)
        if gate is None:
            return await self._errors.call(lambda: send(self._client))
        if self._once is None:
            self._once = self._client.with_options(max_retries=0)
        once = self._once
        return await governed_call(self._errors, lambda: send(once), gate, self.max_retries)

    def warm(self) -> None:
        """Do now, once, what the SDK does lazily at its first request (import its resource
        modules, complete its response models, its retry-less copy): 30-150 ms on a loaded
        machine. A call a shared rate limit governs runs it before it takes its turn
        (:class:`~agentscope_teams.usage.governor.ModelCall`), so a process's first request
        reaches the provider when the limiter placed it, not that much later, next to the
        following turn (a provider that allows no burst answers that 429)."""
        if self._warmed:
            return
        self._warmed = True
        if self._once is None:
            self._once = self._client.with_options(max_retries=0)
        self._warm_sdk()

    def _warm_sdk(self) -> None:
        """The SDK's lazy first-request work (:meth:`warm`); a subclass names it."""

    @property
    def model_name(self) -> str:
        return self.model

    @property
    def key_fingerprint(self) -> str:
        """16 hex digits of the API key's SHA-256: names the key (a shared rate limit is per key)
        without holding it."""
        return hashlib.sha256(self._api_key.encode()).hexdigest()[:16]

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
