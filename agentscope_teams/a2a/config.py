"""The ``a2a:`` block of a spec: a remote A2A agent that runs as this subagent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator


class RemoteAgentConfig(BaseModel):
    """Where the remote agent is and how to call it.

    ``url``: its Agent Card (``.../.well-known/agent-card.json``, or any ``.json`` URL) or the base
    URL the card is found under. ``headers`` go with every request to ``url``'s origin (the
    card's too), never to another origin the card names as its endpoint (:mod:`.remote`);
    ``${VAR}`` and ``${VAR:-default}`` in their values are expanded when a run starts, only for an
    operator's spec or a trusted project. ``timeout``: seconds one turn may take (the remote task
    is cancelled after it); ``retries``: attempts more when the agent cannot be reached (a send
    that reached it is never repeated); ``poll``: seconds between reads of a running task.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: Annotated[str, Field(min_length=1)]
    headers: dict[str, str] = Field(default_factory=dict)
    timeout: Annotated[float, Field(gt=0, le=86400)] = 300.0
    retries: Annotated[int, Field(ge=0, le=10)] = 2
    poll: Annotated[float, Field(gt=0, le=60)] = 0.5

    @field_validator("url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"a2a.url must be an http(s) URL, got {value!r}")
        return value

    @property
    def card_location(self) -> tuple[str, str | None]:
        """(base URL, card path relative to it; None: the well-known path)."""
        if self.url.endswith(".json"):
            base, _, name = self.url.rpartition("/")
            if base.endswith("/.well-known"):
                return base.removesuffix("/.well-known"), f".well-known/{name}"
            return base, name
        return self.url, None

    @property
    def needs_expansion(self) -> bool:
        return any("${" in v for v in self.headers.values())

    def expanded(self, expand: Callable[[str, str], str]) -> RemoteAgentConfig:
        """A copy whose header values went through ``expand(value, where)``."""
        headers = {k: expand(v, f"a2a.headers.{k}") for k, v in self.headers.items()}
        return self.model_copy(update={"headers": headers})
