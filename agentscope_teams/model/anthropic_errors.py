"""From an anthropic SDK exception to a :class:`~agentscope_teams.errors.ModelError`.

The same mapping as for OpenAI (:mod:`.model_errors`): the class comes from the HTTP status, or,
for an ``error`` event inside a stream (sent with HTTP 200), from the error ``type`` in its body
(``overloaded_error``, ``rate_limit_error``, ...); the provider code is that ``type``. Messages,
fields and key scrubbing are those of :class:`~.model_errors.ErrorMapper`.
"""

from __future__ import annotations

import json

import anthropic

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
from .model_errors import ErrorMapper, Failure, status_kind
from .rate_headers import retry_after_of

#: Error types of the Messages API, for errors that arrive inside a stream.
ERROR_TYPES: dict[str, type[ModelError]] = {
    "authentication_error": AuthenticationError,
    "permission_error": AuthenticationError,
    "not_found_error": ModelConfigurationError,
    "rate_limit_error": RateLimitError,
    "timeout_error": ModelTimeoutError,
    "api_error": ModelServerError,
    "overloaded_error": ModelServerError,
}


class AnthropicErrorMapper(ErrorMapper):
    """Classifies anthropic SDK exceptions."""

    sdk_errors = (anthropic.AnthropicError, json.JSONDecodeError)

    def classify(self, exc: Exception) -> Failure:
        if isinstance(exc, anthropic.APITimeoutError):
            return Failure(ModelTimeoutError)
        if isinstance(exc, anthropic.APIConnectionError):
            return Failure(ModelConnectionError)
        if isinstance(exc, anthropic.APIStatusError):
            kind_name = _error_type(exc.body)
            code = self.scrub(kind_name) if kind_name else None
            body, detail = self.excerpt(exc.body), self.detail(exc.body)
            if exc.status_code < 400:  # an ``error`` event in a stream
                kind = ERROR_TYPES.get(code or "", ModelServerError)
                return Failure(kind, None, detail or "stream error", code, body)
            status = exc.status_code
            wait = retry_after_of(exc.response.headers)  # a 429 or 5xx retried waits it
            return Failure(status_kind(status), status, detail, code, body, wait)
        if isinstance(exc, anthropic.APIResponseValidationError):
            return Failure(ModelResponseError, exc.status_code, body=self.excerpt(exc.body))
        return super().classify(exc)


def _error_type(body: object) -> str | None:
    """``error.type`` of a Messages API error body (``{"type": "error", "error": {...}}``)."""
    inner = body.get("error") if isinstance(body, dict) else None
    kind = inner.get("type") if isinstance(inner, dict) else None
    return kind if isinstance(kind, str) else None
