"""The code-review team through the Python API: what ``agentscope-teams review`` does, in 40 lines.

    python examples/code_review/run.py                          # the sample project, offline
    python examples/code_review/run.py src/ --model dashscope:qwen-plus

The lead (prompt: ``lead.md``) lists the Python files, creates a team, spawns the reviewers of
``specs/`` (reviewer, security-scanner, perf-tester), assigns them tasks, waits and writes the report.
Without ``--model`` every agent runs on :class:`OfflineReviewModel`: deterministic static analysis
that drives the same team tools an LLM would, not an LLM. The store is in memory; use
``store="sqlite:///./review.db"`` (or Redis, SQL) to keep the sessions and the board.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from agentscope_teams import HarnessAgent
from agentscope_teams.agent import ReActConfig
from agentscope_teams.agent.config import CompressionConfig
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model import ChatModel, model_from_string
from agentscope_teams.review.offline_model import OfflineReviewModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, TeamLeadExtension
from agentscope_teams.tools import filesystem_tools

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


async def review(target: Path, model: ChatModel) -> str:
    store = InMemoryStore()
    team = TeamLeadExtension(REPO / "specs")  # members run in this process
    lead = HarnessAgent(
        "lead",
        model,
        (HERE / "lead.md").read_text(),
        workspace=target,
        workspace_scope="shared",  # the workspace is the reviewed directory itself
        store=store,
        tools=[t for t in filesystem_tools() if t.read_only],
        builtin_tools=False,
        extensions=[team],
        # the offline model has no context window and reads its place in a task from the turn:
        # no context compression for it (a real LLM keeps the default)
        config=ReActConfig(
            compression=CompressionConfig(enabled=not isinstance(model, OfflineReviewModel))
        ),
    )
    ctx = RuntimeContext(session_id="review-1", user_id="alice")
    try:
        reply = await lead.call(f"Review the Python code.\nTarget: {target.name}", ctx)
    finally:
        await team.aclose()  # stop the member loops
    client = LocalTeamClient(store, ctx)
    for t in await client.list_tasks((await client.list_teams())[0].id):
        print(f"{t.id} {t.status.value:<9} {t.owner or '-':<16} {t.title}")
    return reply.get_text_content()


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the code-review team on a directory.")
    parser.add_argument("path", nargs="?", type=Path, default=REPO / "examples" / "sample_project")
    parser.add_argument("--model", help="e.g. dashscope:qwen-plus (default: the offline model)")
    args = parser.parse_args()
    model = model_from_string(args.model) if args.model else OfflineReviewModel()
    report = anyio.run(review, args.path.resolve(), model)
    print()
    print(report)


if __name__ == "__main__":
    main()
