"""The end-of-run token table of ``review`` and ``run``: reported tokens per agent."""

from __future__ import annotations

from ..tracing import UsageMeter


def usage_lines(meter: UsageMeter) -> list[str]:
    """One line per agent (input / output tokens as the model reported them) and a total."""
    if not meter.agents:
        return ["tokens: no model request reported usage"]
    width = max(len(name) for name in meter.agents)
    lines = ["tokens used (as reported by the model):"]
    for name, u in meter.agents.items():
        lines.append(
            f"  {name:<{width}}  {u.total_tokens:>9,} "
            f"(input {u.input_tokens:,}, output {u.output_tokens:,}; {u.requests} requests)"
        )
    total = meter.total
    lines.append(f"  {'total':<{width}}  {total.total_tokens:>9,}")
    return lines


def usage_json(meter: UsageMeter) -> dict[str, object]:
    """The same figures as a JSON event (``--json``)."""
    return {
        "type": "usage",
        "agents": {
            name: {
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "requests": u.requests,
            }
            for name, u in meter.agents.items()
        },
    }
