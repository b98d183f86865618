from __future__ import annotations

import pytest

from agentscope_teams.errors import ConfigurationError, ModelConfigurationError
from agentscope_teams.model import (
    OpenAIChatModel,
    ScriptedModel,
    model_from_string,
    resolve_model,
)

ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "DASHSCOPE_API_KEY", "DASHSCOPE_BASE_URL")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def test_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-one")
    model = model_from_string("openai:gpt-4o-mini")
    assert isinstance(model, OpenAIChatModel)
    assert (model.model_name, model.provider) == ("gpt-4o-mini", "openai")
    assert model.base_url == "https://api.openai.com/v1"
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.local/v1/")
    assert model_from_string("openai:gpt-4o").base_url == "http://proxy.local/v1"  # type: ignore[attr-defined]


def test_dashscope(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-ds")
    model = model_from_string("dashscope:qwen-plus")
    assert isinstance(model, OpenAIChatModel)
    assert model.base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    monkeypatch.setenv(
        "DASHSCOPE_BASE_URL", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    )
    assert "intl" in model_from_string("dashscope:qwen-plus").base_url  # type: ignore[attr-defined]


def test_openai_compatible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    with pytest.raises(ModelConfigurationError, match="OPENAI_BASE_URL"):
        model_from_string("openai-compatible:qwen3-max")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.local/v1")
    model = model_from_string("openai-compatible:qwen3:8b", max_retries=5)
    assert isinstance(model, OpenAIChatModel)
    assert (model.model, model.base_url, model.max_retries) == (
        "qwen3:8b",
        "http://env.local/v1",
        5,
    )
    explicit = model_from_string(
        "openai-compatible:qwen3-max", base_url="http://arg.local/v1", api_key="sk-arg"
    )
    assert explicit.base_url == "http://arg.local/v1"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "variable"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("dashscope:qwen-plus", "DASHSCOPE_API_KEY"),
        ("openai-compatible:qwen3-max", "OPENAI_API_KEY"),
    ],
)
def test_missing_key_names_the_variable(
    monkeypatch: pytest.MonkeyPatch, spec: str, variable: str
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.local/v1")
    with pytest.raises(ModelConfigurationError, match=variable):
        model_from_string(spec)


@pytest.mark.parametrize("spec", ["anthropic:claude", "gpt-4o", ""])
def test_unknown_provider_lists_the_prefixes(spec: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        model_from_string(spec)
    for prefix in ("openai:", "dashscope:", "openai-compatible:"):
        assert prefix in str(info.value)


def test_empty_model_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-one")
    with pytest.raises(ModelConfigurationError, match="no model id"):
        model_from_string("openai:")


def test_resolve_model(monkeypatch: pytest.MonkeyPatch) -> None:
    scripted = ScriptedModel(["hi"])
    assert resolve_model(scripted) is scripted
    monkeypatch.setenv("OPENAI_API_KEY", "sk-one")
    assert isinstance(resolve_model("openai:gpt-4o-mini"), OpenAIChatModel)
    with pytest.raises(ModelConfigurationError, match="got int"):
        resolve_model(42)  # type: ignore[arg-type]


def test_repr_hides_the_key_and_url_password() -> None:
    model = OpenAIChatModel(
        "m", api_key="sk-very-secret", base_url="https://user:pw@host.local/v1", provider="vllm"
    )
    assert "sk-very-secret" not in repr(model) and "pw" not in repr(model)
    assert "host.local" in repr(model)
