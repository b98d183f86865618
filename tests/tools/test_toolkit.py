from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Literal

import anyio
import pytest
from pydantic import BaseModel

from agentscope_teams.errors import ToolError
from agentscope_teams.message import ToolUseBlock
from agentscope_teams.tools import (
    RAW_ARGUMENTS_KEY,
    Tool,
    ToolEnv,
    Toolkit,
    current_tool_env,
    filesystem_tools,
    parse_docstring,
    tool,
    use_tool_env,
)


class Point(BaseModel):
    x: int
    y: int = 0


@tool(read_only=True)
async def search(
    query: str,
    limit: int = 10,
    ratio: float = 0.5,
    exact: bool = False,
    mode: Literal["fast", "deep"] = "fast",
    tags: list[str] | None = None,
    labels: dict[str, str] | None = None,
    at: Point | None = None,
    env: ToolEnv | None = None,
) -> dict[str, Any]:
    """Search the index for documents.

    This second paragraph is not part of the description.

    Args:
        query: Words to look
            for in the documents.
        limit (int): Maximum number of hits.
        mode: Search strategy.

    Returns:
        The hits.
    """
    return {"query": query, "limit": limit, "exact": exact, "at": at}


def call(name: str, **arguments: Any) -> ToolUseBlock:
    return ToolUseBlock(id="call-1", name=name, input=arguments)


def test_schema_from_signature_and_docstring() -> None:
    schema = search.schema()
    assert schema.name == "search"
    assert schema.description == "Search the index for documents."
    props = schema.parameters["properties"]
    assert list(props) == ["query", "limit", "ratio", "exact", "mode", "tags", "labels", "at"]
    assert schema.parameters["required"] == ["query"]
    assert props["query"] == {
        "type": "string",
        "description": "Words to look for in the documents.",
    }
    assert props["limit"] == {
        "type": "integer",
        "default": 10,
        "description": "Maximum number of hits.",
    }
    assert props["ratio"]["type"] == "number"
    assert props["exact"] == {"type": "boolean", "default": False}
    assert props["mode"]["enum"] == ["fast", "deep"]
    assert props["mode"]["description"] == "Search strategy."
    assert {"type": "array", "items": {"type": "string"}} in props["tags"]["anyOf"]
    assert props["at"]["anyOf"][0] == {"$ref": "#/$defs/Point"}
    assert "Point" in schema.parameters["$defs"]
    assert "env" not in props
    assert schema.parameters["additionalProperties"] is False


def test_rest_docstring_and_flags() -> None:
    def rename(old: str, new: str, env: ToolEnv) -> str:
        """Rename a thing.

        :param old: Current name.
        :param str new: New name,
            unique.
        """
        return new

    t = tool(rename, name="rename_thing", requires_confirmation=True)
    props = t.parameters["properties"]
    assert t.name == "rename_thing"
    assert props["old"]["description"] == "Current name."
    assert props["new"]["description"] == "New name, unique."
    assert list(props) == ["old", "new"]
    assert t.primary_argument == "old"
    assert t.requires_confirmation and not t.read_only and not t.concurrency_safe
    assert search.read_only and search.concurrency_safe
    assert tool(rename, read_only=True, concurrency_safe=False).concurrency_safe is False


def test_parse_docstring_without_summary() -> None:
    def f(a: int, b: int) -> None:
        """Args:
        a: first
            line two
        b: second

        Returns:
            nothing
        """

    summary, params = parse_docstring(f.__doc__)
    assert summary == ""
    assert params == {"a": "first line two", "b": "second"}


def test_unsupported_signatures_fail_at_decoration() -> None:
    def varargs(*items: str) -> str:
        return ""

    with pytest.raises(TypeError, match="items"):
        tool(varargs)
    with pytest.raises(ValueError, match="invalid tool name"):
        tool(parse_docstring, name="has space")


async def test_arguments_are_coerced_and_models_built() -> None:
    result = await Toolkit([search]).execute(call("search", query="q", limit="3", at={"x": "2"}))
    assert not result.is_error
    assert result.tool_use_id == "call-1" and result.name == "search"
    assert result.output == '{"query":"q","limit":3,"exact":false,"at":{"x":2,"y":0}}'


async def test_invalid_arguments_name_each_field() -> None:
    result = await Toolkit([search]).execute(call("search", limit="many", colour="red"))
    assert result.is_error
    assert "query: missing required argument" in result.output
    assert "limit: Input should be a valid integer" in result.output
    assert "'many'" in result.output
    assert "colour: unexpected argument" in result.output


async def test_unparseable_json_arguments() -> None:
    result = await Toolkit([search]).execute(call("search", **{RAW_ARGUMENTS_KEY: '{"query": '}))
    assert result.is_error
    assert "not valid JSON" in result.output and '{"query": ' in result.output
    assert "query" in result.output


async def test_unknown_tool_lists_available_names() -> None:
    kit = Toolkit([search, *filesystem_tools()])
    result = await kit.execute(call("web_search", query="x"))
    assert result.is_error and result.name == "web_search"
    assert "unknown tool 'web_search'" in result.output
    assert "search, read_file, write_file" in result.output


async def test_tool_errors_become_error_results(caplog: pytest.LogCaptureFixture) -> None:
    @tool
    async def strict(n: int) -> str:
        if n < 0:
            raise ToolError("n must be positive; pass n >= 0")
        raise KeyError("boom")

    kit = Toolkit([strict])
    refused = await kit.execute(call("strict", n=-1))
    assert refused.is_error and refused.output == "n must be positive; pass n >= 0"
    with caplog.at_level(logging.WARNING):
        crashed = await kit.execute(call("strict", n=1))
    assert crashed.is_error
    assert crashed.output == "tool strict failed: KeyError: 'boom'"
    assert any(r.exc_info for r in caplog.records if "strict" in r.getMessage())


async def test_cancellation_propagates() -> None:
    @tool
    async def slow() -> str:
        await anyio.sleep(10)
        return "done"

    reached = False
    with anyio.move_on_after(0.05) as scope:
        await Toolkit([slow]).execute(call("slow"))
        reached = True
    assert scope.cancelled_caught and not reached


async def test_sync_tool_runs_in_a_thread_with_env(tmp_path: Any) -> None:
    loop_thread = threading.get_ident()

    @tool
    def where(env: ToolEnv) -> dict[str, Any]:
        return {"other_thread": threading.get_ident() != loop_thread, "agent": env.agent_name}

    env = ToolEnv(workspace=tmp_path, agent_name="coder")
    result = await Toolkit([where]).execute(call("where"), env=env)
    assert result.output == '{"other_thread":true,"agent":"coder"}'
    with use_tool_env(env):
        assert current_tool_env() is env
        assert (await Toolkit([where]).execute(call("where"))).output.endswith('"coder"}')


async def test_missing_env_is_reported() -> None:
    @tool
    async def needs_env(env: ToolEnv) -> str:
        return str(env.workspace)

    with pytest.raises(LookupError, match="use_tool_env"):
        current_tool_env()
    result = await Toolkit([needs_env]).execute(call("needs_env"))
    assert result.is_error and "no ToolEnv is active" in result.output


def test_use_tool_env_is_a_small_class_restored_on_error_and_not_entered_twice(
    tmp_path: Path,
) -> None:
    """Every tool batch of a call enters one: a slotted class, not a ``@contextmanager``."""
    outer, inner = ToolEnv(workspace=tmp_path), ToolEnv(workspace=tmp_path / "inner")
    scope = use_tool_env(outer)
    assert not hasattr(scope, "__dict__")
    with scope as entered:
        assert entered is outer and current_tool_env() is outer
        with pytest.raises(RuntimeError, match="already entered"):
            scope.__enter__()
        with pytest.raises(ValueError), use_tool_env(inner):
            assert current_tool_env() is inner
            raise ValueError
        assert current_tool_env() is outer
    with pytest.raises(LookupError):
        current_tool_env()


async def test_output_conversion_and_truncation() -> None:
    @tool
    async def model() -> Point:
        return Point(x=1)

    @tool
    async def nothing() -> None:
        return None

    @tool
    async def big() -> str:
        return "x" * 500

    kit = Toolkit([model, nothing, big], max_output_chars=100)
    assert (await kit.execute(call("model"))).output == '{"x":1,"y":0}'
    assert (await kit.execute(call("nothing"))).output == ""
    out = (await kit.execute(call("big"))).output
    assert out.startswith("x" * 100 + "\n") and "400 of 500 characters omitted" in out


async def test_plain_tool_validates_against_its_schema() -> None:
    async def echo(text: str, times: int = 1) -> str:
        return text * times

    plain = Tool(
        name="echo",
        description="Echo text.",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string"}, "times": {"type": "integer"}},
            "required": ["text"],
            "additionalProperties": False,
        },
        func=echo,
    )
    kit = Toolkit([plain])
    assert (await kit.execute(call("echo", text="ab", times=2))).output == "abab"
    bad = await kit.execute(call("echo", times=True, loud=1))
    assert bad.is_error
    assert "text: missing required argument" in bad.output
    assert "times: expected integer, got bool" in bad.output
    assert "loud: unexpected argument" in bad.output
    assert plain.primary_argument == "text"


def test_toolkit_collection_api() -> None:
    kit = Toolkit(filesystem_tools())
    assert kit.names() == [
        "read_file",
        "write_file",
        "edit_file",
        "multi_edit",
        "list_files",
        "glob_files",
        "grep_files",
        "notebook_edit",
    ]
    assert len(kit) == 8 and "Read" in kit and "LS" in kit and "Bash" not in kit
    read = kit.get("Read")
    assert read is not None and read.name == "read_file"
    with pytest.raises(ValueError, match="already in this toolkit"):
        kit.register(filesystem_tools()[0])
    assert kit.subset(["Grep", "read_file", "Bash"]).names() == ["grep_files", "read_file"]
    assert kit.unknown(["Read", "Bash"]) == ["Bash"]
    assert kit.without(["Write", "Edit", "MultiEdit", "NotebookEdit"]).names() == [
        "read_file",
        "list_files",
        "glob_files",
        "grep_files",
    ]
    merged = kit.subset(["Read"]).merged(Toolkit([search]))
    assert merged.names() == ["read_file", "search"]
    with pytest.raises(ValueError, match="both have a tool named 'read_file'"):
        merged.merged(filesystem_tools())
    assert [s.name for s in merged.schemas()] == ["read_file", "search"]


def test_register_plain_function() -> None:
    kit = Toolkit()

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    t = kit.register(add)
    assert kit.get("add") is t and t.description == "Add two numbers."
