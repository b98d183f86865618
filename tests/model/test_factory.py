from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentscope_teams.errors import ConfigurationError, ModelConfigurationError
from agentscope_teams.model import (
    OpenAIChatModel,
    ScriptedModel,
    factory,
    model_from_string,
    register_model,
    registered_models,
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


@pytest.mark.parametrize("spec", ["mistral:large", "gpt-4o", ""])
def test_unknown_provider_lists_the_prefixes(spec: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        model_from_string(spec)
    for prefix in ("openai:", "dashscope:", "openai-compatible:", "anthropic:"):
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


# -- models registered by name ---------------------------------------------------------------------


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """Registrations made by a test are dropped after it."""
    monkeypatch.setattr(factory, "_SCHEMES", dict(factory._SCHEMES))


def test_offline_is_registered_and_built_lazily() -> None:
    assert "offline" in registered_models()
    model = model_from_string(" offline ")
    assert type(model).__module__ == "agentscope_teams.review.offline_model"
    assert model.model_name == "offline-review (deterministic, no LLM)"
    assert type(resolve_model("offline")) is type(model)


def test_a_registered_import_path_is_imported_on_first_use(
    registry: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "my_models_for_test.py").write_text(
        "from agentscope_teams.model import ScriptedModel\n"
        "def build(**kwargs):\n"
        "    return ScriptedModel([kwargs['answer']])\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    register_model("mine", "my_models_for_test:build")
    assert "my_models_for_test" not in sys.modules
    model = model_from_string("mine", answer="hello")
    assert isinstance(model, ScriptedModel)
    assert "my_models_for_test" in sys.modules
    monkeypatch.delitem(sys.modules, "my_models_for_test")


def test_a_registered_callable(registry: None) -> None:
    scripted = ScriptedModel(["hi"])
    register_model("fixed", lambda: scripted)
    assert model_from_string("fixed") is scripted
    assert "fixed" in registered_models()


def test_an_unknown_name_lists_the_registered_models(registry: None) -> None:
    register_model("fixed", lambda: ScriptedModel(["hi"]))
    with pytest.raises(ModelConfigurationError) as info:
        model_from_string("fixd")
    assert "'openai:<model>'" in str(info.value)
    assert "registered model ('fable', 'fixed', 'haiku', 'offline', 'opus', 'sonnet')" in str(
        info.value
    )


@pytest.mark.parametrize("name", ["", " x", "a:b"])
def test_invalid_names_are_refused(registry: None, name: str) -> None:
    with pytest.raises(ModelConfigurationError, match="invalid model name"):
        register_model(name, lambda: ScriptedModel(["hi"]))


@pytest.mark.parametrize("path", ["no_colon", "pkg.mod:", "a b:c", ":attr"])
def test_invalid_import_paths_are_refused(registry: None, path: str) -> None:
    with pytest.raises(ModelConfigurationError, match=r"package\.module:attribute"):
        register_model("x", path)


def test_a_taken_name_needs_replace(registry: None) -> None:
    first, second = ScriptedModel(["1"]), ScriptedModel(["2"])
    register_model("m", lambda: first)
    with pytest.raises(ModelConfigurationError, match="already registered"):
        register_model("m", lambda: second)
    register_model("m", lambda: second, replace=True)
    assert model_from_string("m") is second


def test_a_builder_that_cannot_be_loaded_or_builds_no_model(registry: None) -> None:
    register_model("missing", "agentscope_teams.no_such_module:build")
    with pytest.raises(ModelConfigurationError, match="cannot load the builder"):
        model_from_string("missing")
    register_model("not-callable", "agentscope_teams.model.factory:_SCHEMES")
    with pytest.raises(ModelConfigurationError, match="not callable"):
        model_from_string("not-callable")
    register_model("wrong", lambda: "a string")
    with pytest.raises(ModelConfigurationError, match="returned a str, not a ChatModel"):
        model_from_string("wrong")


def test_a_builder_module_that_raises_or_a_builder_that_fails_is_a_configuration_error(
    registry: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "raises_at_import.py").write_text("raise RuntimeError('broken at import')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    register_model("broken", "raises_at_import:build")
    with pytest.raises(ModelConfigurationError, match=r"raises_at_import.*broken at import"):
        model_from_string("broken")
    register_model("attr", "json:no_such_builder")
    with pytest.raises(ModelConfigurationError, match="module 'json' has no attribute"):
        model_from_string("attr")

    def failing() -> ScriptedModel:
        raise TypeError("needs an argument")

    register_model("failing", failing)
    with pytest.raises(ModelConfigurationError, match="model 'failing' raised TypeError"):
        model_from_string("failing")


@pytest.mark.parametrize(
    ("spec", "kwargs", "expected"),
    [
        (
            "openai:gpt-x",
            {"max_retries": -1},
            "openai model 'gpt-x': max_retries must be >= 0, got -1",
        ),
        (
            "openai:gpt-x",
            {"timeout": 0},
            "openai model 'gpt-x': timeout must be > 0 seconds, got 0",
        ),
        ("anthropic:c-x", {"timeout": -2.5}, "anthropic model 'c-x': timeout must be > 0 seconds"),
        (
            "anthropic:c-x",
            {"max_tokens": 0},
            "anthropic model 'c-x': max_tokens must be > 0, got 0",
        ),
    ],
)
def test_a_bad_number_is_named_with_the_model_and_the_value(
    spec: str, kwargs: dict[str, float], expected: str
) -> None:
    with pytest.raises(ModelConfigurationError) as info:
        model_from_string(spec, api_key="k", base_url="http://127.0.0.1:9/v1", **kwargs)
    assert expected in str(info.value)
