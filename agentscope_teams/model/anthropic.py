"""``AnthropicChatModel``: Claude models through the Anthropic Messages API, via the official SDK.

Needs the ``anthropic`` extra (``pip install 'agentscope-teams[anthropic]'``). The key comes from
``api_key=`` or ``ANTHROPIC_API_KEY``, the endpoint from ``base_url=``, ``ANTHROPIC_BASE_URL`` or
``https://api.anthropic.com``. Retries are the SDK's own (``max_retries``; 408, 409, 429, 5xx
including 529 "overloaded", timeouts and failed connections, honouring ``Retry-After``), except in
a call a shared rate limit governs, retried through the limiter (:mod:`.retries`); failures
left become :class:`~agentscope_teams.errors.ModelError` subclasses as for OpenAI (see
:mod:`.anthropic_errors`). Tools, streamed text and tool input, base64 images in user messages and
token usage (cached input included) are supported. The key never appears in reprs, error messages
or error fields, and no SDK exception is chained to the errors raised.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import Any

from ..errors import MissingDependencyError, ModelConfigurationError

try:  # before the modules below, which import the SDK too
    import anthropic
except ImportError:
    raise MissingDependencyError("anthropic models", "anthropic", ["anthropic"]) from None

from .anthropic_errors import AnthropicErrorMapper
from .anthropic_format import to_anthropic_messages, to_anthropic_tools
from .anthropic_response import MessageStreamAssembler, parse_message
from .base import ModelRequest, ModelResponse, StreamItem, effort_note
from .providers import ANTHROPIC, redact_url
from .sdk_model import SdkChatModel

#: Models that take ``output_config.effort`` (Opus 4.5 and later, Sonnet 4.6 and later).
_EFFORT_MODEL = re.compile(r"claude-(?:opus-4-[5-9]|opus-[5-9]|sonnet-4-[6-9]|sonnet-[5-9])")
DEFAULT_MAX_TOKENS = 4096  # the Messages API requires max_tokens; used when a request sets none


class AnthropicChatModel(SdkChatModel):
    """A :class:`~agentscope_teams.model.ChatModel` for Claude models.

    Use it inside one event loop and ``aclose()`` it (or ``async with``) when done; concurrent
    calls share one connection pool.
    """

    _client: anthropic.AsyncAnthropic

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 3,
        timeout: float = 120.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        if max_tokens <= 0:
            raise ModelConfigurationError(
                f"anthropic model {model!r}: max_tokens must be > 0, got {max_tokens!r}"
            )
        super().__init__(
            model,
            provider=ANTHROPIC,
            label=ANTHROPIC.name,
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            timeout=timeout,
            mapper=AnthropicErrorMapper,
        )
        self.max_tokens = max_tokens
        self._client = anthropic.AsyncAnthropic(
            api_key=self._api_key, base_url=self.base_url, max_retries=max_retries, timeout=timeout
        )

    def __repr__(self) -> str:
        return f"AnthropicChatModel(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    def _warm_sdk(self) -> None:
        _ = self._client.messages
        anthropic.types.Message.model_rebuild()
        self._client.platform_headers()

    async def generate(self, request: ModelRequest) -> ModelResponse:
        kwargs = self._request_kwargs(request)
        message = await self._send(lambda client: client.messages.create(stream=False, **kwargs))
        data = message.to_dict(warnings=False)  # the SDK does not validate: parse_message does
        where, url = self._errors.where, self._errors.url
        return parse_message(data, model=self.model, source=where, base_url=url)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        kwargs = self._request_kwargs(request)
        events = await self._send(lambda client: client.messages.create(stream=True, **kwargs))
        assembler = MessageStreamAssembler(
            model=self.model, source=self._errors.where, base_url=self._errors.url
        )
        relayed = self._errors.relay(events, assembler, lambda e: e.to_dict(warnings=False))
        # aclosing: a caller that stops reading closes the SDK stream here, at once
        async with aclosing(relayed) as items:
            async for item in items:
                yield item

    def _request_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_anthropic_messages(request),
            "max_tokens": request.max_tokens or self.max_tokens,
        }
        if request.system_prompt:
            kwargs["system"] = request.system_prompt
        if request.tools:
            kwargs["tools"] = to_anthropic_tools(request.tools)
        extra: dict[str, Any] = {}
        if request.temperature is not None:  # not a named argument of every SDK version
            extra["temperature"] = request.temperature
        if request.effort is not None:
            if _EFFORT_MODEL.search(self.model):
                extra["output_config"] = {"effort": request.effort}
            else:
                effort_note(self.model, request.effort)
        if extra:
            kwargs["extra_body"] = extra
        return kwargs
