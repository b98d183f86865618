"""From a provider SDK's exception to a :class:`~agentscope_teams.errors.ModelError`: the part every
provider shares.

The class comes from the HTTP status (:func:`status_kind`) or the exception type, never from message
text; the message names the endpoint, the model and what to do next; the fields hold the status, the
provider's error code, a body excerpt, the model id and the base URL. The API key is scrubbed from
all of them, and :class:`ErrorMapper` keeps it out of its repr. Each provider's subclass
(:mod:`.openai_errors`, :mod:`.anthropic_errors`) names its SDK's exceptions and classifies them.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from ..errors import (
    AuthenticationError,
    ModelConfigurationError,
    ModelConnectionError,
    ModelError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    RateLimitError,
)
from .base import ModelResponse, StreamItem
from .providers import redact_url

T = TypeVar("T")

BODY_CHARS = 500  # the longest body excerpt an error keeps
DETAIL_CHARS = 300  # the longest server message quoted in an error message


@dataclass(frozen=True)
class Failure:
    """One failed call, classified: the error class and what is known."""

    kind: type[ModelError]
    status: int | None = None
    detail: str = ""
    code: str | None = None
    body: str | None = None
    #: Seconds the provider asked to wait (its headers; see :mod:`.rate_headers`): what a retry
    #: waits (:mod:`.retries`), and a RateLimitError's ``retry_after``.
    retry_after: float | None = None


def status_kind(status: int) -> type[ModelError]:
    """The error class for an HTTP status."""
    if status in (401, 403):
        return AuthenticationError
    if status == 404:
        return ModelConfigurationError
    if status == 408:
        return ModelTimeoutError
    if status == 429:
        return RateLimitError
    if status >= 500:
        return ModelServerError
    return ModelError


def attempts_of(exc: BaseException) -> int:
    """How many HTTP requests the SDK sent before raising ``exc``: the SDKs number their retries in
    the ``x-stainless-retry-count`` header of each request, and the error keeps the last request."""
    request = getattr(exc, "request", None)
    try:
        count = request.headers.get("x-stainless-retry-count") if request is not None else None
        return int(count) + 1 if count is not None else 1
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return 1


class StreamAssembly(Protocol):
    """What :meth:`ErrorMapper.relay` needs of a provider's stream assembler."""

    def feed(self, event: dict[str, Any]) -> Iterable[StreamItem]: ...

    def finish(self) -> ModelResponse: ...


class ErrorMapper:
    """Classifies SDK exceptions and builds the errors of one model at one endpoint; runs an SDK
    call or relays an SDK stream so that a failure surfaces as that error (:meth:`call`,
    :meth:`relay`). A provider's subclass sets :attr:`sdk_errors` and :meth:`classify`."""

    #: The exceptions of the SDK (and of decoding what it returned) that become a ModelError.
    sdk_errors: tuple[type[Exception], ...] = (json.JSONDecodeError,)

    def __init__(
        self,
        *,
        model: str,
        provider: str,
        base_url: str,
        api_key: str,
        key_hint: str,
        base_url_env: str,
        timeout: float,
    ) -> None:
        self.model, self.timeout = model, timeout
        self.url = redact_url(base_url)  # for messages and error fields
        self.where = f"{provider} endpoint {self.url}"
        self._api_key, self._key_hint, self._base_url_env = api_key, key_hint, base_url_env

    def classify(self, exc: Exception) -> Failure:
        """The failure ``exc`` (one of :attr:`sdk_errors`) stands for; a provider extends this."""
        if isinstance(exc, json.JSONDecodeError):
            return Failure(ModelResponseError, body=self.excerpt(exc.doc))
        return Failure(ModelError, detail=type(exc).__name__)

    async def call(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` (the SDK retries inside it); a failure left becomes a ModelError, raised
        outside the ``except`` block so no SDK exception (holding the request) is chained."""
        try:
            return await call()
        except self.sdk_errors as exc:
            failure, attempts = self.classify(exc), attempts_of(exc)
        raise self.error(failure, attempts=attempts)

    async def relay(
        self,
        events: Any,
        assembler: StreamAssembly,
        to_dict: Callable[[Any], dict[str, Any]],
    ) -> AsyncGenerator[StreamItem, None]:
        """The items of the SDK stream ``events`` (an async context manager and iterator), each
        decoded by ``to_dict`` and fed to ``assembler``, then its final response. A failure
        mid-stream is raised as a streaming ModelError (deltas were already sent), unchained."""
        async with events:
            iterator = events.__aiter__()
            while True:
                failure: Failure | None = None
                try:
                    event = await iterator.__anext__()
                except StopAsyncIteration:
                    break
                except self.sdk_errors as exc:
                    failure = self.classify(exc)
                if failure is not None:
                    raise self.error(failure, attempts=1, streaming=True)
                for delta in assembler.feed(to_dict(event)):
                    yield delta
        yield assembler.finish()

    def error(self, f: Failure, *, attempts: int, streaming: bool = False) -> ModelError:
        """The error to raise for ``f`` (key scrubbed); ``streaming``: deltas were already sent."""
        if streaming and f.kind in (ModelConnectionError, ModelTimeoutError):
            text = (
                f"lost the response stream from {self.where} for model {self.model!r} "
                f"({'timed out' if f.kind is ModelTimeoutError else 'connection dropped'}); "
                "retry the call"
            )
        else:
            text = self._message(f, attempts)
        error = f.kind(
            self.scrub(text),
            status_code=f.status,
            code=f.code,
            body=f.body,
            model=self.model,
            base_url=self.scrub(self.url),
        )
        if isinstance(error, RateLimitError):
            error.retry_after = f.retry_after
        return error

    def scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def excerpt(self, body: object) -> str | None:
        """The start of an error body as text (JSON for a decoded body)."""
        if body is None:
            return None
        if isinstance(body, bytes):
            text = body.decode(errors="replace")
        elif isinstance(body, str):
            text = body
        else:
            text = json.dumps(body, ensure_ascii=False, default=str)
        text = self.scrub(text)
        return text[:BODY_CHARS] + ("..." if len(text) > BODY_CHARS else "")

    def detail(self, body: object) -> str:
        """The server's error message, shortened."""
        if isinstance(body, dict):
            inner = body.get("error")
            body = body.get("message") or (inner.get("message") if isinstance(inner, dict) else "")
        text = body if isinstance(body, str) else ""
        text = " ".join(self.scrub(text).split())
        return text[:DETAIL_CHARS] + ("..." if len(text) > DETAIL_CHARS else "")

    def _message(self, f: Failure, attempts: int) -> str:
        model, where, status = self.model, self.where, f.status
        detail = f" ({f.detail})" if f.detail else ""
        tries = f"{attempts} attempt" + ("s" if attempts != 1 else "")
        if f.kind is AuthenticationError:
            return (
                f"{where} rejected the API key for model {model!r} (HTTP {status}): "
                f"key invalid or expired; check {self._key_hint}{detail}"
            )
        if f.kind is ModelConfigurationError:
            return f"{where} has no model {model!r} (HTTP 404){detail}; check the model id and base URL"
        if f.kind is RateLimitError:
            return (
                f"rate limited by {where} (HTTP 429) for model {model!r} after {tries}{detail}; "
                "wait, lower the request rate or raise max_retries"
            )
        if f.kind is ModelServerError:
            if status is None:
                return f"{where} reported an error while streaming model {model!r}{detail}"
            return f"{where} failed with HTTP {status} for model {model!r} after {tries}{detail}"
        if f.kind is ModelConnectionError:
            return (
                f"cannot connect to the model endpoint at {self.url} after "
                f"{tries}; check that the server is running and that the base URL "
                f"({self._base_url_env} or base_url=) is right"
            )
        if f.kind is ModelTimeoutError:
            if status is not None:
                return f"{where} answered HTTP {status} for model {model!r} after {tries}"
            return f"model {model!r} at {where} did not answer within {self.timeout}s ({tries})"
        if f.kind is ModelResponseError:
            return f"response from {where} for model {model!r} is not valid JSON"
        if status is None:
            return f"calling {where} for model {model!r} failed{detail}"
        return f"{where} rejected the request for model {model!r} (HTTP {status}){detail}"
