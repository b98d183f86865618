"""``SessionConfig``: what a session is set up with, with AgentScope 2.0's field names accepted.

``workspace_id`` (AgentScope's name) is the same field as ``workspace``. The model configs are
kept as given; this project's agents read ``model`` / ``system_prompt``, not ``chat_model_config``.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, model_validator

from ..records import FROM_STORE, InputRecord


class _Part(BaseModel):
    """A part of :class:`SessionConfig`; mutable like AgentScope's (see there)."""


class _ModelConfig(_Part):
    """A model chosen for the session (AgentScope's shape): provider, credential, model."""

    type: str
    credential_id: str
    model: str
    parameters: dict[str, Any] = Field(default_factory=dict)


class ChatModelConfig(_ModelConfig):
    """A chat model chosen for the session; ``model_class`` as AgentScope names it."""

    model_class: str = ""


class TTSModelConfig(_ModelConfig):
    """A text-to-speech model for the session."""


class RealtimeModelConfig(_ModelConfig):
    """A realtime voice model for the session."""


class SessionKnowledgeConfig(_Part):
    """Knowledge bases attached to the session and the retrieval parameters."""

    knowledge_base_ids: list[str] = Field(default_factory=list)
    parameters: dict[str, Any] = Field(default_factory=dict)


class SessionNaming(_Part):
    """Whether the display name may still be replaced by a generated title."""

    auto: bool = False


class SessionConfig(InputRecord):
    """The session's configuration. Mutable, as AgentScope's is (``config.name = ...`` before an
    upsert works); a change reaches the store only through ``upsert_session`` (a new store version
    of the record). The storage copies a config when it takes one and when it hands one out, so
    changing a config after ``upsert_session`` or ``get_session`` changes neither what is stored
    nor the storage's cache. An unknown field is refused, but kept in a stored config (a newer
    release's: :class:`~agentscope_teams.records.InputRecord`)."""

    model: str | None = None
    system_prompt: str | None = None
    workspace: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    name: str | None = None
    naming: SessionNaming = Field(default_factory=SessionNaming)
    cwd: str | None = None
    chat_model_config: ChatModelConfig | None = None
    fallback_chat_model_config: ChatModelConfig | None = None
    tts_model_config: TTSModelConfig | None = None
    realtime_model_config: RealtimeModelConfig | None = None
    knowledge_config: SessionKnowledgeConfig | None = None

    @model_validator(mode="before")
    @classmethod
    def _workspace_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and "workspace_id" in data:
            data = dict(data)
            workspace_id = data.pop("workspace_id")
            if data.get("workspace") not in (None, workspace_id):
                raise ValueError(
                    f"workspace_id={workspace_id!r} and workspace={data['workspace']!r} name the "
                    "same field; give one of them"
                )
            data["workspace"] = workspace_id
        return data

    @property
    def workspace_id(self) -> str | None:
        """AgentScope's name for :attr:`workspace`."""
        return self.workspace


def copy_config(config: SessionConfig) -> SessionConfig:
    """An independent copy of ``config`` (its parts, lists and dicts too), rebuilt from its whole
    dump (a default dict filled in place is not "set"): 2-4x cheaper than ``model_copy(deep=True)``.
    The storage takes and hands out copies so that a caller changing its config changes nothing
    stored (a config must be JSON data to be stored, so the dump loses nothing)."""
    return SessionConfig.model_validate(config.model_dump(), context=FROM_STORE)
