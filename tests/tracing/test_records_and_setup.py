"""Trace context in run / task / team records (old records still load), the CLI's SDK setup from
``OTEL_*`` variables, and the usage meter's reach into background runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentscope_teams.errors import ConfigurationError
from agentscope_teams.model.base import Usage
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents import RunRecord
from agentscope_teams.teams.rules.models import Task, Team
from agentscope_teams.tracing import AgentUsage, joined, metering, trace_id_of
from agentscope_teams.tracing.setup import configure_from_env, wanted_exporters

from ..subagents.helpers import ALICE, make_parent, settled, spawn
from .helpers import Spans, memory_provider

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_records_written_before_tracing_load_without_a_trace_context() -> None:
    run = {
        "schema_version": 1, "run_id": "r-1", "parent_agent": "lead", "spec": "rev",
        "task": "t", "child_session": "c", "depth": 1, "lease": "h",
    }  # fmt: skip
    assert RunRecord.model_validate_json(json.dumps(run)).trace_context is None
    task = Task.from_bytes(json.dumps({"id": "t-1", "seq": 1, "title": "x"}).encode(), 3)
    assert task.trace_context is None and task.version == 3
    assert Team.model_validate({"id": "team-1", "name": "crew"}).trace_context is None


def test_a_task_keeps_its_trace_context_through_bytes() -> None:
    task = Task(id="t-1", seq=1, title="x", trace_context={"traceparent": PARENT})
    again = Task.from_bytes(task.to_bytes(), 1)
    assert trace_id_of(again.trace_context) == "0af7651916cd43dd8448eb211c80319c"
    assert trace_id_of({"traceparent": "garbage"}) is None and trace_id_of(None) is None


def test_joined_makes_the_next_span_a_child_of_the_stored_one() -> None:
    provider, exporter = memory_provider()
    tracer = provider.get_tracer("t")
    with joined({"traceparent": PARENT}):
        tracer.start_span("child").end()
    tracer.start_span("outside").end()
    spans = Spans(exporter.get_finished_spans())
    child, outside = spans.one("child"), spans.one("outside")
    assert f"{child.context.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"
    assert child.parent is not None and f"{child.parent.span_id:016x}" == "b7ad6b7169203331"
    assert outside.parent is None and outside.context.trace_id != child.context.trace_id


def test_the_environment_decides_whether_and_where_to_export() -> None:
    assert wanted_exporters({}) == []
    assert wanted_exporters({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}) == ["otlp"]
    assert wanted_exporters({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318"}) == ["otlp"]
    assert wanted_exporters({"OTEL_TRACES_EXPORTER": "console, otlp"}) == ["console", "otlp"]
    assert (
        wanted_exporters({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"}) == []
    )
    disabled = {"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "console"}
    assert wanted_exporters(disabled) == []
    assert configure_from_env({}) is None
    with pytest.raises(ConfigurationError, match=r"'zipkin'.*use otlp, console or none"):
        configure_from_env({"OTEL_TRACES_EXPORTER": "zipkin"})


@pytest.mark.anyio
async def test_the_usage_meter_counts_background_runs_too(tmp_path: Path) -> None:
    store = InMemoryStore()
    usage = Usage(input_tokens=30, output_tokens=5)
    child = ScriptedModel([ScriptedModel.text("bg answer", usage=usage)], delay=0.1)
    lead_model = ScriptedModel([spawn("rev", "later", timeout_seconds=0), "started"])
    lead = make_parent(tmp_path, store, lead_model, {"rev": child})
    with metering() as meter:
        await lead.call("go", ALICE)
        await settled(store)
    assert meter.agents["rev"] == AgentUsage(input_tokens=30, output_tokens=5, requests=1)
    assert meter.agents["lead"].requests == 2
    assert meter.total.input_tokens == 30


def test_without_opentelemetry_installed_agents_run_untraced(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None  # as if the otel extra were not installed\n"
        "import anyio\n"
        "from agentscope_teams import HarnessAgent, RuntimeContext, tracing\n"
        "from agentscope_teams.model import ScriptedModel\n"
        "from agentscope_teams.store import InMemoryStore\n"
        "async def main():\n"
        "    model = ScriptedModel([ScriptedModel.tool_call('glob_files', {'pattern': '*'}), 'ok'])\n"
        "    agent = HarnessAgent('a', model, workspace=sys.argv[1], store=InMemoryStore())\n"
        "    with tracing.metering() as meter:\n"
        "        msg = await agent.call('go', RuntimeContext(session_id='s'))\n"
        "    print(tracing.AVAILABLE, tracing.carrier(), msg.get_text_content(), meter.agents['a'].requests)\n"
        "anyio.run(main)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "None", "ok", "2"]
