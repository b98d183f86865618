"""The offline review model, logging every call's reported usage (``--model
python:tests.cli.review_calls:model``): one line of tokens per call, appended to the file named by
``REVIEW_CALLS_LOG``, from the review's process and from its ``--workers`` processes alike."""

from __future__ import annotations

import os

import anyio

from agentscope_teams.model import ModelRequest, ModelResponse
from agentscope_teams.review.cache import default_cache_dir
from agentscope_teams.review.offline_model import OfflineReviewModel

LOG_ENV = "REVIEW_CALLS_LOG"


class LoggedOfflineModel(OfflineReviewModel):
    """The offline model (so the review runs as with ``offline``), each call's tokens logged."""

    async def generate(self, request: ModelRequest) -> ModelResponse:
        response = await super().generate(request)
        used = response.usage.input_tokens + response.usage.output_tokens
        async with await anyio.open_file(os.environ[LOG_ENV], "a", encoding="utf-8") as log:
            await log.write(f"{used}\n")  # one short append per call
        return response


def model() -> LoggedOfflineModel:
    return LoggedOfflineModel(default_cache_dir())
