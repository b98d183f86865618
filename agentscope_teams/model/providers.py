"""Known providers: where their key and base URL come from.

:data:`PROVIDERS` are the OpenAI-compatible ones; :data:`ANTHROPIC` is the Messages API.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from ..errors import ModelConfigurationError


@dataclass(frozen=True)
class Provider:
    """A provider prefix of ``model_from_string`` and the environment variables it reads."""

    name: str
    key_env: str
    base_url_env: str
    default_base_url: str | None


PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        Provider("openai", "OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
        Provider(
            "dashscope",
            "DASHSCOPE_API_KEY",
            "DASHSCOPE_BASE_URL",
            "https://dashscope.aliyuncs.com/compatible-mode/v1",
        ),
        Provider("openai-compatible", "OPENAI_API_KEY", "OPENAI_BASE_URL", None),
    )
}


#: The Anthropic Messages API (``anthropic:<model>``, :class:`~.anthropic.AnthropicChatModel`).
ANTHROPIC = Provider(
    "anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com"
)


def get_provider(name: str) -> Provider:
    """The provider called ``name``; an unknown label behaves like ``openai-compatible``."""
    return PROVIDERS.get(name) or Provider(name, "OPENAI_API_KEY", "OPENAI_BASE_URL", None)


def resolve_api_key(provider: Provider, model: str, api_key: str | None) -> str:
    """The explicit key, else the provider's environment variable; raises naming the variable."""
    key = api_key if api_key is not None else os.environ.get(provider.key_env, "")
    if not key.strip():
        raise ModelConfigurationError(
            f"no API key for {provider.name} model {model!r}: "
            f"set the {provider.key_env} environment variable or pass api_key="
        )
    return key.strip()


def resolve_base_url(provider: Provider, model: str, base_url: str | None) -> str:
    """The explicit base URL, else the provider's environment variable, else its default."""
    url = base_url or os.environ.get(provider.base_url_env) or provider.default_base_url
    if not url:
        raise ModelConfigurationError(
            f"no base URL for {provider.name} model {model!r}: "
            f"set the {provider.base_url_env} environment variable or pass base_url="
        )
    return url.rstrip("/")


def redact_url(url: str) -> str:
    """``url`` without a ``user:password@`` part, for messages."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, "***@" + host, parts.path, parts.query, parts.fragment))
