"""Reading ``deploy/``: the compose file's and the manifests' commands, made runnable here."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
CLI = Path(sys.executable).with_name("agentscope-teams")


def compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    return data


def manifests() -> list[dict[str, Any]]:
    """Every document of ``deploy/k8s/*.yaml``."""
    docs: list[dict[str, Any]] = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def flag(argv: list[str], name: str) -> str:
    """The value after ``name`` in ``argv`` (the recipe must name it)."""
    assert name in argv, f"{name} is missing from {argv}"
    return argv[argv.index(name) + 1]


def replaced(argv: list[str], values: dict[str, str]) -> list[str]:
    """``argv`` with the value of each flag of ``values`` replaced (each flag must be there), and
    the console script of this environment for ``agentscope-teams``."""
    out = list(argv)
    for name, value in values.items():
        flag(out, name)
        out[out.index(name) + 1] = value
    assert out[0] == "agentscope-teams", out
    return [str(CLI), *out[1:]]
