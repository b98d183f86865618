"""Configuration of the ReAct loop."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CompressionConfig(BaseModel):
    """When the context's estimated size passes ``trigger_tokens``, older messages are summarized.

    The size is what the model last reported (input + output tokens of the latest response) plus an
    estimate of the messages added since; without reported usage every message is estimated, about
    4 characters per token for ASCII and one token per CJK character. At least ``keep_recent_tokens`` of the newest messages are
    kept verbatim; the summary is capped at ``summary_max_chars`` so a long session stays bounded.
    """

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    trigger_tokens: int = Field(default=48_000, ge=100)
    keep_recent_tokens: int = Field(default=12_000, ge=0)
    summary_max_chars: int = Field(default=8_000, ge=100)


class ReActConfig(BaseModel):
    """How the loop runs: iteration cap, tool parallelism, compression, recovery, streaming, and
    how many invalid structured outputs (``output_type=``) a reply sends back to the model before
    it fails with ``OutputRetriesExceededError``."""

    model_config = ConfigDict(extra="forbid")
    max_iters: int = Field(default=20, ge=1)
    parallel_tools: bool = True
    compression: CompressionConfig = Field(default_factory=CompressionConfig)
    recover_pending_tools: bool = True
    stream_model: bool = True
    output_retries: int = Field(default=2, ge=0)
    #: Reasoning effort sent with every model request (``low`` ... ``max``); None: the model's own.
    effort: str | None = None
