"""``OpenAIChatModel``: any OpenAI-compatible chat-completions endpoint, via the official SDK.

Retries (``max_retries``) are the SDK's own: it retries 408, 409, 429, 5xx, timeouts and failed
connections with exponential backoff (0.5 s doubling to 8 s, with jitter), waits what
``Retry-After``/``retry-after-ms`` asks up to two minutes and does not retry when a server asks for
longer. A call that a usage governor's shared rate limit governs turns the SDK's retries off and
retries through the limiter instead, each attempt taking a turn (:mod:`.retries`). Every failure left is mapped to a :class:`~agentscope_teams.errors.ModelError` subclass
with structured fields (see :mod:`.openai_errors`); the message counts the attempts the SDK made.
A stream is retried only until it opens; once deltas have been yielded an error is raised.
The API key never appears in reprs, log records, error messages or error fields,
and errors are raised outside the SDK's ``except`` blocks so no SDK exception (whose request carries
the key) is chained to them.

Needs the ``openai`` extra (``pip install 'agentscope-teams[openai]'``); without it, importing this
module raises :class:`~agentscope_teams.errors.MissingDependencyError` naming the extra.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ..errors import MissingDependencyError, ModelConfigurationError

try:  # before the modules below, which import the SDK too
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
except ImportError:
    raise MissingDependencyError("OpenAI-compatible models", "openai", ["openai"]) from None

from .base import ModelRequest, ModelResponse, StreamItem, StructuredOutputMode, effort_note
from .openai_errors import OpenAIErrorMapper
from .openai_format import to_openai_messages, to_openai_response_format, to_openai_tools
from .openai_response import StreamAssembler, parse_completion
from .providers import get_provider, redact_url
from .sdk_model import SdkChatModel

#: Models with ``reasoning_effort`` (o-series, gpt-5 family); ours -> theirs where they differ.
_REASONING_MODEL = re.compile(r"(?:[\w.-]+/)?(?:o\d|gpt-5)")
_OPENAI_EFFORT = {"xhigh": "high", "max": "high"}


class OpenAIChatModel(SdkChatModel):
    """A :class:`~agentscope_teams.model.ChatModel` for OpenAI, DashScope, vLLM, Ollama, ...

    ``api_key`` and ``base_url`` default to the provider's environment variables (see
    :mod:`agentscope_teams.model.providers`). Use it inside one event loop and ``aclose()`` it (or
    ``async with``) when done; concurrent calls share one connection pool.
    """

    _client: openai.AsyncOpenAI

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 3,
        timeout: float = 60.0,
        extra_body: dict[str, Any] | None = None,
        provider: str = "openai",
        structured_output: StructuredOutputMode | None = None,
    ) -> None:
        super().__init__(
            model,
            provider=get_provider(provider),
            label=provider,
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
            mapper=OpenAIErrorMapper,
        )
        self.extra_body = dict(extra_body or {})
        if structured_output not in (None, "native", "tool"):
            raise ModelConfigurationError(
                f"structured_output must be 'native' or 'tool', got {structured_output!r}"
            )
        #: How this model returns structured output (see ``StructuredOutputMode``): ``native``
        #: (``response_format`` JSON schema) by default for OpenAI itself, ``tool`` (a final-answer
        #: tool) for other endpoints, where JSON-schema response formats are not always supported.
        self.structured_output: StructuredOutputMode = structured_output or (
            "native" if provider == "openai" else "tool"
        )
        self._client = openai.AsyncOpenAI(
            api_key=self._api_key, base_url=self.base_url, max_retries=max_retries, timeout=timeout
        )

    def __repr__(self) -> str:
        return (
            f"OpenAIChatModel(model={self.model!r}, provider={self.provider!r}, "
            f"base_url={redact_url(self.base_url)!r})"
        )

    def _warm_sdk(self) -> None:
        _ = self._client.chat.completions  # imports the chat resources (~40 ms)
        ChatCompletion.model_rebuild()
        ChatCompletionChunk.model_rebuild()
        self._client.platform_headers()

    async def generate(self, request: ModelRequest) -> ModelResponse:
        kwargs = self._request_kwargs(request)
        completion = await self._send(
            lambda client: client.chat.completions.create(stream=False, **kwargs)
        )
        data = completion.to_dict() if isinstance(completion, ChatCompletion) else completion
        where, url = self._errors.where, self._errors.url
        return parse_completion(data, model=self.model, source=where, base_url=url)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        kwargs = self._request_kwargs(request)
        chunks = await self._send(
            lambda client: client.chat.completions.create(
                stream=True, stream_options={"include_usage": True}, **kwargs
            )
        )
        assembler = StreamAssembler(
            model=self.model, source=self._errors.where, base_url=self._errors.url
        )
        relayed = self._errors.relay(chunks, assembler, lambda c: c.to_dict())
        # aclosing: a caller that stops reading closes the SDK stream here, at once
        async with aclosing(relayed) as items:
            async for item in items:
                yield item

    def _request_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": to_openai_messages(request)}
        if request.tools:
            kwargs["tools"] = to_openai_tools(request.tools)
        if request.response_schema is not None:
            kwargs["response_format"] = to_openai_response_format(request.response_schema)
        if request.max_tokens is not None:
            kwargs["max_tokens"] = request.max_tokens
        if request.temperature is not None:
            kwargs["temperature"] = request.temperature
        if request.effort is not None:
            if _REASONING_MODEL.match(self.model):
                kwargs["reasoning_effort"] = _OPENAI_EFFORT.get(request.effort, request.effort)
            else:
                effort_note(self.model, request.effort)
        if self.extra_body:
            kwargs["extra_body"] = dict(self.extra_body)
        return kwargs
