"""A team across two processes over Redis: the lead in one, its members in a worker process.

    python examples/team_over_redis.py                       # redis://localhost:6379/0
    python examples/team_over_redis.py --store redis://host:6379/1

The lead runs with ``run_members="workers"``: it creates a team, spawns two members and assigns four
tasks, but runs no member itself. A second process (``Worker``, what ``agentscope-teams worker``
runs) finds the team in the store, runs the members, and they claim and complete the tasks; the lead
waits and reads the results. Each result names the process that did the work. ScriptedModel plays
every agent (no LLM, no key). Without a reachable Redis the demo says so and uses a file store, which
is shared by processes on one host in the same way.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import uuid
from typing import Any

import anyio

from agentscope_teams import HarnessAgent
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel
from agentscope_teams.store import StoreBackend, store_from_url
from agentscope_teams.subagents import SubagentSpec
from agentscope_teams.teams import TeamLeadExtension, Worker, WorkerConfig

COUNTER = SubagentSpec(
    name="counter", description="Counts the words of a sentence.", system_prompt="Count.", tools=[]
)
SENTENCES = ["the quick brown fox", "jumps over", "the lazy dog", "and runs far away again"]


def outputs(request: ModelRequest) -> list[str]:
    return [r.output for m in request.messages for r in m.tool_results()]


def lead_brain(request: ModelRequest) -> ModelResponse | str:
    done = outputs(request)
    if not done:
        return ScriptedModel.tool_call("createTeam", {"name": "word-count"})
    if len(done) == 1:
        names = ("counter-1", "counter-2")
        return ScriptedModel.tool_calls(
            [("spawnMember", {"name": n, "spec": "counter"}) for n in names]
        )
    if len(done) == 3:
        tasks = [
            ("assignTask", {"title": f"count {i + 1}", "description": s})
            for i, s in enumerate(SENTENCES)
        ]
        return ScriptedModel.tool_calls(tasks)
    if len(done) == 7 or done[-1].startswith("Timed out"):
        return ScriptedModel.tool_call("waitForTeam", {"timeout_seconds": 30})
    if done[-1].startswith("All "):  # clean up: the board and the messages go, the results stay
        return ScriptedModel.tool_call("deleteTeam", {}, text=done[-1])
    summary = next(o for o in reversed(done) if o.startswith("All "))
    return "The team counted every sentence:\n" + summary


def member_brain(request: ModelRequest) -> ModelResponse | str:
    last = outputs(request)[-1] if outputs(request) else ""
    claimed = re.match(r"Claimed task (t-\d+): [^\n]*\n\n([^\n]*)", last)
    if claimed:
        words = len(claimed[2].split())
        result = f"{words} words (counted in process {os.getpid()})"
        return ScriptedModel.tool_call("completeTask", {"task_id": claimed[1], "result": result})
    if last.startswith("No task is claimable"):
        return "Nothing left to count."
    return ScriptedModel.tool_call("claimTask", {})


def open_store(url: str, namespace: str) -> StoreBackend:
    options: dict[str, Any] = {"namespace": namespace} if url.startswith("redis") else {}
    return store_from_url(url, **options)


async def reachable(url: str, namespace: str) -> bool:
    try:
        async with open_store(url, namespace) as store:
            await store.get(("ping",))
        return True
    except Exception:
        return False


async def run_worker(url: str, namespace: str) -> None:
    config = WorkerConfig(specs={"counter": COUNTER}, model=ScriptedModel(member_brain), poll=0.2)
    async with open_store(url, namespace) as store:
        await Worker(store, config).run()  # until SIGTERM


async def run_lead(url: str, namespace: str) -> None:
    async with open_store(url, namespace) as store:
        team = TeamLeadExtension({"counter": COUNTER}, run_members="workers")
        lead = HarnessAgent(
            "lead",
            ScriptedModel(lead_brain),
            workspace=tempfile.gettempdir(),
            store=store,
            builtin_tools=False,
            extensions=[team],
        )
        ctx = RuntimeContext(session_id="word-count", user_id="alice")
        reply = await lead.call("Count the words of four sentences with a team.", ctx)
        print(f"lead (process {os.getpid()}): {reply.get_text_content()}")


async def sweep(url: str, namespace: str) -> None:
    """Remove what the demo left in its namespace (sessions, leases)."""
    async with open_store(url, namespace) as store:
        while page := await store.list_keys((), limit=500):
            for key in page:
                await store.delete(key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", nargs="?", choices=["demo", "worker"], default="demo")
    parser.add_argument("--store", default="redis://localhost:6379/0")
    parser.add_argument("--namespace", default=f"team-demo-{uuid.uuid4().hex[:8]}")
    args = parser.parse_args()
    if args.role == "worker":
        anyio.run(run_worker, args.store, args.namespace)
        return
    url = args.store
    if not anyio.run(reachable, url, args.namespace):
        url = "file://" + tempfile.mkdtemp(prefix="team-demo-store-")
        print(f"Redis is not reachable at {args.store}; using the file store {url} instead")
    cmd = [sys.executable, __file__, "worker", "--store", url, "--namespace", args.namespace]
    worker = subprocess.Popen(cmd)
    try:
        anyio.run(run_lead, url, args.namespace)
    finally:
        worker.terminate()
        worker.wait(timeout=10)
        anyio.run(sweep, url, args.namespace)
    print(f"worker process {worker.pid} stopped")


if __name__ == "__main__":
    main()
