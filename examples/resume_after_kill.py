"""Resume after a killed process: the session survives SIGKILL and a new process carries on.

    python examples/resume_after_kill.py

A worker process runs an agent that processes five batches, one tool call each. The agent's state is
saved to the store after every step. This script kills the worker (SIGKILL, no cleanup) while it
works on batch 3, then runs the same session in a new process: the unfinished tool call is closed as
"did not complete", the agent retries that batch and finishes. The batch log shows every batch done,
and none twice except the one that was cut off. ScriptedModel plays the agent (no LLM, no key).
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel
from agentscope_teams.tools import ToolEnv, tool

BATCHES = 5
CTX = RuntimeContext(session_id="nightly-import", user_id="ops")


@tool
async def process_batch(n: int, env: ToolEnv) -> str:
    """Process one batch (slow: a second each).

    Args:
        n: Batch number.
    """
    log = env.workspace / "batches.log"
    with log.open("a") as fh:
        fh.write(f"start {n}\n")
    await anyio.sleep(1.0 if n == 3 else 0.2)
    with log.open("a") as fh:
        fh.write(f"done {n}\n")
    return f"batch {n} processed"


def brain(request: ModelRequest) -> ModelResponse | str:
    """Process the first batch without a successful result; answer when all are done."""
    done = {
        int(r.output.split()[1])
        for m in request.messages
        for r in m.tool_results()
        if not r.is_error and r.output.startswith("batch ")
    }
    todo = [n for n in range(1, BATCHES + 1) if n not in done]
    if not todo:
        return f"All {BATCHES} batches processed."
    return ScriptedModel.tool_call("process_batch", {"n": todo[0]}, text=f"Batch {todo[0]}.")


def agent(store_url: str, workspace: Path) -> HarnessAgent:
    return HarnessAgent(
        "importer",
        ScriptedModel(brain, name="scripted"),
        workspace=workspace,
        workspace_scope="shared",
        store=store_url,
        tools=[process_batch],
        builtin_tools=False,
        lease_ttl=1.0,  # a dead process's claim on the session expires after a second
    )


async def work(store_url: str, workspace: Path, message: str) -> None:
    async with agent(store_url, workspace) as importer:
        reply = await importer.call(message, CTX)
        print(f"importer: {reply.get_text_content()}")


def wait_for(log: Path, line: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not (log.exists() and line in log.read_text().splitlines()):
        if time.monotonic() > deadline:
            raise SystemExit(f"the worker did not reach {line!r} in {timeout:g}s")
        time.sleep(0.05)


def demo() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workspace, store_url = Path(tmp) / "ws", f"file://{tmp}/store"
        workspace.mkdir()
        log = workspace / "batches.log"
        cmd = [
            sys.executable,
            __file__,
            "work",
            "--store",
            store_url,
            "--workspace",
            str(workspace),
        ]
        worker = subprocess.Popen([*cmd, "--message", "Run the nightly import."])
        wait_for(log, "start 3")
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        print(f"killed the worker (exit {worker.returncode}) during batch 3")
        print("  log so far:", ", ".join(log.read_text().split("\n")[:-1]))
        subprocess.run([*cmd, "--message", "The process was restarted: continue."], check=True)
        print("  final log:", ", ".join(log.read_text().split("\n")[:-1]))
        done = [line for line in log.read_text().splitlines() if line.startswith("done")]
        assert done == [f"done {n}" for n in range(1, BATCHES + 1)], done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", nargs="?", choices=["demo", "work"], default="demo")
    parser.add_argument("--store")
    parser.add_argument("--workspace", type=Path)
    parser.add_argument("--message", default="")
    args = parser.parse_args()
    if args.step == "demo":
        demo()
    else:
        anyio.run(work, args.store, args.workspace, args.message)


if __name__ == "__main__":
    main()
