"""``deploy/``: the Kubernetes manifests and the compose file name commands, flags, ports, probe
paths and metrics that exist (the CLI parser accepts the arguments; the paths are served; the
autoscaler's metric is exported)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agentscope_teams.cli.app import build_parser
from agentscope_teams.cli.metrics_http import _route
from agentscope_teams.server import create_app
from agentscope_teams.store import InMemoryStore
from agentscope_teams.teams import TaskStatus
from agentscope_teams.tracing.metrics import Metrics

from .recipe import DEPLOY, compose, flag, manifests

SERVE_PORT_FLAGS = {"serve": "--port", "worker": "--metrics-port"}


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in manifests() if d["kind"] == kind]


def containers() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [
        (deployment, c)
        for deployment in by_kind("Deployment")
        for c in deployment["spec"]["template"]["spec"]["containers"]
    ]


def parse(argv: list[str]) -> Any:
    """The CLI's own parser on ``argv`` (environment references filled with a store URL)."""
    filled = [re.sub(r"\$\((\w+)\)|\$\{[^}]+\}", "redis://redis:6379/0", a) for a in argv]
    return build_parser().parse_args(filled)


def served_paths_of_serve() -> set[str]:
    app = create_app(InMemoryStore(), metrics=True)
    return {getattr(r, "path", "") for r in app.routes}


async def worker_answers(path: str) -> int:
    status, _, _ = await _route(f"GET {path} HTTP/1.1\r\n\r\n".encode(), InMemoryStore())
    return status


def test_every_container_runs_a_command_the_cli_accepts() -> None:
    found = set()
    for _, c in containers():
        assert c["command"] == ["agentscope-teams"]
        args = parse(c["args"])
        found.add(args.command)
        port = int(flag(c["args"], SERVE_PORT_FLAGS[args.command]))
        assert [p["containerPort"] for p in c["ports"]] == [port]
    assert found == {"serve", "worker"}


async def test_probes_hit_served_paths_on_declared_ports() -> None:
    serve_paths = served_paths_of_serve()
    for _, c in containers():
        ports = {p["name"] for p in c["ports"]} | {p["containerPort"] for p in c["ports"]}
        for probe in ("livenessProbe", "readinessProbe"):
            get = c[probe]["httpGet"]
            assert get["port"] in ports, (c["name"], probe)
            if c["args"][0] == "serve":
                assert get["path"] in serve_paths
            else:
                assert await worker_answers(get["path"]) == 200
        assert (c["livenessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["path"]) == (
            "/healthz",
            "/readyz",
        )


def test_the_service_selects_serve_on_its_port() -> None:
    [service] = by_kind("Service")
    [serve] = [d for d in by_kind("Deployment") if d["metadata"]["name"].endswith("serve")]
    labels = serve["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    names = {p["name"] for c in serve["spec"]["template"]["spec"]["containers"] for p in c["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= names


def test_the_autoscaler_scales_workers_on_an_exported_queue_metric() -> None:
    [hpa] = by_kind("HorizontalPodAutoscaler")
    deployments = {d["metadata"]["name"] for d in by_kind("Deployment")}
    assert hpa["spec"]["scaleTargetRef"]["name"] in deployments
    assert "worker" in hpa["spec"]["scaleTargetRef"]["name"]
    [metric] = hpa["spec"]["metrics"]
    name = metric["external"]["metric"]["name"]
    exported = {m.name: m for m in Metrics().all}
    assert name in exported
    labels = metric["external"]["metric"]["selector"]["matchLabels"]
    assert set(labels) <= set(exported[name].labels)
    assert labels["status"] in {s.value for s in TaskStatus}
    assert name in (DEPLOY.parent / "docs" / "deploy.md").read_text()


@pytest.mark.parametrize("service", ["serve", "worker-1", "worker-2"])
def test_compose_commands_are_accepted_and_scraped(service: str) -> None:
    spec = compose()["services"][service]
    args = parse(spec["command"][1:])
    port = flag(spec["command"], SERVE_PORT_FLAGS[args.command])
    scrape = (DEPLOY / "prometheus.yml").read_text()
    assert f"{service}:{port}" in scrape


def test_the_image_is_slim_non_root_with_bubblewrap_and_the_extras_it_runs() -> None:
    import tomllib

    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:[\d.]+-slim\b", text, re.M)
    assert re.search(r"apt-get install .*\bbubblewrap\b", text)
    [user] = re.findall(r"^USER (\S+)", text, re.M)
    assert user not in ("root", "0")
    extras = set(re.search(r'pip install [^"]*"\.\[([^\]]+)\]"', text)[1].split(","))  # type: ignore[index]
    pyproject = tomllib.loads((DEPLOY.parent / "pyproject.toml").read_text())
    assert extras <= set(pyproject["project"]["optional-dependencies"])
    assert {"server", "redis", "postgres"} <= extras  # serve, and the stores the recipe names
    models = {
        flag(c["args"], "--model").split(":")[0] for _, c in containers() if "--model" in c["args"]
    }
    assert models <= extras  # the provider SDK of the workers' --model (e.g. the openai extra)
    for source in re.findall(r"^COPY (\S+)", text, re.M):
        assert (DEPLOY.parent / source).exists(), source
