"""The JSON schemas we accept and how data is checked against them (issue 22, findings 1 and 2),
each rule attacked, with a control showing what jsonschema's defaults do without it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from agentscope_teams import schema_guard
from agentscope_teams.agent.output import OutputType, check_json_schema
from agentscope_teams.errors import InvalidSchema, OutputValidationError
from agentscope_teams.schema_guard import SchemaLimits, accept, problems, problems_async

from ..schema_attacks import ALTERNATING, NESTED, recording_server, ticks_during

# -- remote references (finding 1) -----------------------------------------------------------


def test_a_remote_ref_is_refused_and_never_fetched() -> None:
    with recording_server() as (base, requested):
        # control: jsonschema's default registry fetches the $ref while checking data
        with pytest.warns(DeprecationWarning):
            assert not jsonschema.Draft202012Validator({"$ref": base + "/ctl"}).is_valid(1)
        assert requested == ["/ctl"]
        attacks: list[dict[str, Any]] = [
            {"$ref": base + "/top"},
            {"type": "object", "properties": {"a": {"$ref": base + "/nested"}}},
            {"$defs": {"x": {"items": {"$ref": base + "/deep"}}}, "$ref": "#/$defs/x"},
            {"$id": base + "/", "$ref": "relative.json"},  # resolves against a remote $id
            {"properties": {"a": {"$id": base + "/sub", "type": "string"}}},
        ]
        for schema in attacks:
            with pytest.raises(InvalidSchema, match=r"not local|\$id at properties.a"):
                accept(schema)
            with pytest.raises(InvalidSchema):
                OutputType.from_schema(schema)
            with pytest.raises(InvalidSchema):
                problems(schema, 1)
        assert requested == ["/ctl"]  # nothing after the control


def test_a_file_ref_is_refused_and_never_read(tmp_path: Path) -> None:
    target = tmp_path / "schema.json"
    target.write_text('{"type": "string"}')
    # control: the default registry reads a file:// reference (/dev/zero would fill memory)
    with pytest.warns(DeprecationWarning):
        assert not jsonschema.Draft202012Validator({"$ref": target.as_uri()}).is_valid(1)
    for ref in (target.as_uri(), "file:///dev/zero", "/dev/zero"):
        with pytest.raises(InvalidSchema, match="is not local: only references inside"):
            accept({"$ref": ref})


def test_local_refs_and_anchors_resolve_inside_the_schema() -> None:
    schema = {
        "$id": "https://example.com/result.json",
        "$defs": {"line": {"type": "integer", "minimum": 1}, "tag": {"$anchor": "tag"}},
        "type": "object",
        "properties": {"line": {"$ref": "#/$defs/line"}, "tag": {"$ref": "#tag"}},
    }
    assert accept(schema) == schema
    assert problems(schema, {"line": 3, "tag": "x"}) == []
    assert problems(schema, {"line": 0}) == ["line: 0 is less than the minimum of 1"]


def test_a_ref_that_names_nothing_or_no_subschema_is_refused() -> None:
    with pytest.raises(InvalidSchema, match=r"\$ref '#/\$defs/gone' at \$ref names nothing"):
        accept({"$ref": "#/$defs/gone"})
    # "#/const" is data, never checked as a schema: following it would run an unchecked schema
    with pytest.raises(InvalidSchema, match="does not point at a subschema"):
        accept({"$ref": "#/const", "const": {"type": 5}})
    with pytest.raises(InvalidSchema, match=r"\$dynamicRef at properties.a is not supported"):
        accept({"properties": {"a": {"$dynamicRef": "#meta"}}})


# -- references that never end (finding 2) ---------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"$ref": "#"},
        {"allOf": [{"$ref": "#"}]},
        {
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
            "$ref": "#/$defs/a",
        },
        {"$defs": {"a": {"not": {"if": {"$ref": "#/$defs/a"}}}}, "$ref": "#/$defs/a"},
        {"dependentSchemas": {"x": {"$ref": "#"}}},
    ],
    ids=["root", "allOf", "two-defs", "not-if", "dependentSchemas"],
)
def test_a_ref_cycle_without_progress_is_refused(schema: dict[str, Any]) -> None:
    # control: jsonschema accepts the schema, and checking data against it never ends
    jsonschema.Draft202012Validator.check_schema(schema)
    with pytest.raises(RecursionError):
        jsonschema.Draft202012Validator(schema).is_valid({"x": 1})
    with pytest.raises(InvalidSchema, match="without descending into the data"):
        accept(schema)


def test_recursion_through_the_data_is_accepted_and_bounded() -> None:
    tree = {"type": "object", "properties": {"child": {"$ref": "#"}}, "additionalProperties": False}
    accept(tree)
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(63):  # 64 levels: the limit
        node["child"] = {}
        node = node["child"]
    assert problems(tree, deep) == []
    node["extra"] = 1
    assert problems(tree, deep) == [
        ".".join(["child"] * 63)
        + ": Additional properties are not allowed ('extra' was unexpected)"
    ]
    node["child"] = {}  # 65 levels
    assert problems(tree, deep) == [
        "(root): not checked: the data nests deeper than 64 levels; flatten it"
    ]


def test_a_recursion_error_never_escapes() -> None:
    tree = {"type": "object", "properties": {"child": {"$ref": "#"}}}
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(499):
        node["child"] = {}
        node = node["child"]
    lax = SchemaLimits(max_instance_depth=1000)
    assert problems(tree, deep, lax) == [
        "(root): not checked: the data and the schema nest too deeply to check"
    ]


# -- patterns (finding 2) --------------------------------------------------------------------


async def test_a_catastrophic_pattern_does_not_block_the_event_loop() -> None:
    schema = {"type": "string", "pattern": ALTERNATING}
    text = "a" * 40 + "!"
    # control: with Python's re (jsonschema's engine) the match holds the GIL, so even in a worker
    # thread the loop gets (almost) no turn while it runs
    import anyio.to_thread

    small = "a" * 22 + "!"
    _, frozen = await ticks_during(
        lambda: anyio.to_thread.run_sync(lambda: re.search(NESTED, small))
    )
    short = SchemaLimits(check_seconds=0.5)
    found, ticks = await ticks_during(lambda: problems_async(schema, text, short))
    assert found == [
        "(root): not checked: checking the data against the schema took longer than 0.5 s "
        "(a slow pattern or many nested alternatives); send simpler data, or ask for a simpler "
        "schema"
    ]
    print(f"ticks: re in a thread {frozen}, bounded check {ticks}")
    assert frozen < 20 <= ticks, (frozen, ticks)


def test_the_audit_pattern_is_answered() -> None:
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": NESTED}}}
    assert problems(schema, {"s": "a" * 30 + "!"}) == [
        "s: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' does not match '^(a+)+$'"
    ]
    assert problems(schema, {"s": "a" * 31}) == []


def test_patterns_are_bounded_in_number_and_length() -> None:
    many = {"properties": {f"p{i}": {"pattern": "a"} for i in range(65)}}
    with pytest.raises(InvalidSchema, match=r"65 patterns .* over the limit of 64"):
        accept(many)
    with pytest.raises(InvalidSchema, match=r"pattern at properties.s.pattern is 513 characters"):
        accept({"properties": {"s": {"pattern": "a" * 513}}})
    with pytest.raises(
        InvalidSchema,
        match="unevaluatedProperties and patternProperties are not accepted in one schema",
    ):
        accept({"unevaluatedProperties": False, "patternProperties": {"^x": {}}})


def test_pattern_properties_and_additional_properties_use_the_bounded_engine() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert problems(schema, {"name": "n", "x-a": 1}) == []
    assert problems(schema, {"x-a": "s", "other": 1}) == [
        "(root): 'other' does not match any of the regexes: '^x-'",
        "x-a: 's' is not of type 'integer'",
    ]
    slow = {"type": "object", "patternProperties": {ALTERNATING: {}}}
    key = "a" * 40 + "!"
    assert problems(slow, {key: 1}, SchemaLimits(check_seconds=0.2))[0].startswith(
        "(root): not checked: checking the data against the schema took longer than 0.2 s"
    )


# -- size of the schema and of the data ------------------------------------------------------


def test_uniqueness_of_8000_objects_takes_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = {"type": "array", "uniqueItems": True}
    # control: jsonschema compares unhashable items pairwise: quadratic in the array
    from jsonschema import _utils

    calls = 0
    original = _utils.equal

    def counted(one: Any, two: Any) -> bool:
        nonlocal calls
        calls += 1
        return original(one, two)

    monkeypatch.setattr(_utils, "equal", counted)
    assert jsonschema.Draft202012Validator(schema).is_valid([{"i": i} for i in range(300)])
    assert calls >= 300 * 299 // 2
    calls = 0
    canonical = 0
    real = schema_guard._canonical

    def count_canonical(value: Any) -> Any:
        nonlocal canonical
        canonical += 1
        return real(value)

    monkeypatch.setattr(schema_guard, "_canonical", count_canonical)
    items = [{"i": i} for i in range(8000)]
    assert problems(schema, items) == []
    assert calls == 0 and canonical == 8000 * 2  # each object and its one value
    assert problems(schema, [*items, {"i": 5.0}]) == [
        "(root): has non-unique elements (item 8000 equals item 5)"
    ]


def test_json_equality_of_unique_items() -> None:
    schema = {"type": "array", "uniqueItems": True}
    assert problems(schema, [1, True, "1", None, False, 0, [1], [True]]) == []
    assert problems(schema, [{"a": 1, "b": [2]}, {"b": [2], "a": 1.0}]) != []
    assert problems(schema, [[1, 2], [2, 1]]) == []


def test_oversized_data_is_refused_unchecked() -> None:
    schema = {"type": "array"}
    limits = SchemaLimits(max_instance_chars=100)
    assert problems(schema, ["x" * 200], limits) == [
        "(root): not checked: the data is 204 characters as JSON, over the limit of 100; send less"
    ]


def test_oversized_or_deep_schemas_are_refused() -> None:
    big = {"enum": ["x" * 100] * 2000}
    with pytest.raises(InvalidSchema, match="over the limit of 100000"):
        accept(big)
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(40):
        deep = {"items": deep}
    with pytest.raises(InvalidSchema, match="nests deeper than 32 levels"):
        accept(deep)


def test_exponential_alternatives_hit_the_deadline() -> None:
    """No cycle, but each level doubles the work: the per-keyword deadline stops it."""
    defs = {
        f"d{i}": {"anyOf": [{"$ref": f"#/$defs/d{i + 1}"}, {"$ref": f"#/$defs/d{i + 1}"}]}
        for i in range(30)
    }
    defs["d30"] = {"type": "string"}
    schema = {"$defs": defs, "$ref": "#/$defs/d0"}
    accept(schema)
    found = problems(schema, 1, SchemaLimits(check_seconds=0.2))
    assert found[0].startswith("(root): not checked: checking the data against the schema took")


# -- the callers -----------------------------------------------------------------------------


def test_every_schema_entry_point_goes_through_the_guard() -> None:
    from agentscope_teams.subagents.spec import SubagentSpec
    from agentscope_teams.teams.rules import limits

    bad = {"$ref": "#"}
    with pytest.raises(InvalidSchema):
        check_json_schema(bad)
    with pytest.raises(InvalidSchema, match="result_schema is not accepted"):
        limits.result_schema(bad)
    with pytest.raises(Exception, match="output is not accepted"):
        SubagentSpec(name="s", description="d", system_prompt="p", output=bad)
    slow = OutputType.from_schema({"type": "string", "pattern": "^a+$"})
    with pytest.raises(OutputValidationError, match="does not match"):
        slow.validate("b")
    assert json.dumps(accept({"type": "string"})) == '{"type": "string"}'


async def test_an_agent_output_is_checked_off_the_event_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reply whose output is a JSON schema: a slow answer is rejected with the bound's problem
    (the model answers again) while the loop keeps running."""
    from agentscope_teams import HarnessAgent, InMemoryStore, RuntimeContext, ScriptedModel

    monkeypatch.setattr(schema_guard, "LIMITS", SchemaLimits(check_seconds=0.3))
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": ALTERNATING}}}
    model = ScriptedModel(
        [ScriptedModel.final_result({"s": "a" * 40 + "!"}), ScriptedModel.final_result({"s": "aa"})]
    )
    agent = HarnessAgent(
        "a", model, store=InMemoryStore(), workspace=tmp_path / "ws", builtin_tools=False
    )
    ctx = RuntimeContext(session_id="s", user_id="u")
    msg, ticks = await ticks_during(lambda: agent.call("go", ctx, output_type=schema))
    assert not isinstance(msg, BaseException), msg
    assert msg.output == {"s": "aa"}
    told = [b.output for m in model.requests[1].messages for b in m.tool_results()]
    assert any("took longer than 0.3 s" in t for t in told), told
    assert ticks >= 10, ticks
