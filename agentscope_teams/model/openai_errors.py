"""From an openai SDK exception to a :class:`~agentscope_teams.errors.ModelError`, for
``OpenAIChatModel``: the classification; messages, fields and key scrubbing are those of
:class:`~.model_errors.ErrorMapper`.
"""

from __future__ import annotations

import json

import openai

from ..errors import (
    ModelConnectionError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
)
from .model_errors import ErrorMapper, Failure, status_kind
from .rate_headers import retry_after_of


class OpenAIErrorMapper(ErrorMapper):
    """Classifies openai SDK exceptions (also those of OpenAI-compatible servers)."""

    sdk_errors = (openai.OpenAIError, json.JSONDecodeError)

    def classify(self, exc: Exception) -> Failure:
        if isinstance(exc, openai.APITimeoutError):
            return Failure(ModelTimeoutError)
        if isinstance(exc, openai.APIConnectionError):
            return Failure(ModelConnectionError)
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            code, body = self._fields(exc)
            wait = retry_after_of(exc.response.headers)  # a 429 or 5xx retried waits it
            return Failure(status_kind(status), status, self.detail(exc.body), code, body, wait)
        if isinstance(exc, openai.APIResponseValidationError):
            return Failure(ModelResponseError, exc.status_code, body=self.excerpt(exc.body))
        if isinstance(exc, openai.APIError):
            detail = self.detail(exc.body) or "stream error"
            return Failure(ModelServerError, detail=detail, code=self._fields(exc)[0])
        return super().classify(exc)

    def _fields(self, exc: openai.APIError) -> tuple[str | None, str | None]:
        """The provider's error code and a body excerpt of an SDK error."""
        code = self.scrub(exc.code) if exc.code else None
        return code, self.excerpt(exc.body)
