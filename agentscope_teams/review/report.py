"""``render_markdown``: the lead's review.md from the findings each member reported.

One bullet per finding: ``- `file:line` — message (RULE, confidence C) — fix: advice — found by
MEMBER``; a finding without advice (a model's own line) gets the rulebook's advice for its rule
when the rule is one the engines report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .findings import Finding, Severity
from .rulebook import known_category, rule_for


def render_markdown(
    findings_by_member: Mapping[str, Sequence[Finding]],
    target: str,
    model_label: str,
    clean_files: Iterable[str] | None = None,
) -> str:
    """review.md: title, target, model, counts by severity, then findings grouped by severity.

    A finding reported by several members appears once, crediting all of them.
    """
    merged: dict[tuple[str, int, str], tuple[Finding, list[str]]] = {}
    for member, findings in findings_by_member.items():
        for f in findings:
            key = (f.file, f.line, f.rule if known_category(f.rule) else f.message)
            entry = merged.setdefault(key, (f, []))
            if member not in entry[1]:
                entry[1].append(member)
    entries = sorted(merged.values(), key=lambda e: (e[0].severity.rank, e[0].sort_key))
    counts = {s: sum(1 for f, _ in entries if f.severity is s) for s in Severity}

    lines = [
        f"# Code review: {target}",
        "",
        f"- **Target:** `{target}`",
        f"- **Model:** {model_label}",
        f"- **Reviewers:** {', '.join(findings_by_member) or 'none'}",
        "",
        "## Summary",
        "",
        "| Severity | Findings |",
        "| --- | ---: |",
        *(f"| {s.value} | {counts[s]} |" for s in Severity),
        f"| **total** | **{len(entries)}** |",
    ]
    if not entries:
        lines += ["", "No findings."]
    for severity in Severity:
        group = [e for e in entries if e[0].severity is severity]
        if not group:
            continue
        lines += ["", f"## {severity.value.capitalize()} ({len(group)})", ""]
        for f, members in group:
            lines.append(_bullet(f, members))
    clean = sorted(set(clean_files or ()))
    if clean:
        lines += [
            "",
            "## Clean files",
            "",
            "No findings in " + ", ".join(f"`{c}`" for c in clean) + ".",
        ]
    return "\n".join(lines) + "\n"


def _bullet(f: Finding, members: list[str]) -> str:
    message = " ".join(f.message.split())
    advice = f.advice or (rule_for(f.rule).advice if known_category(f.rule) else "")
    fix = f" — fix: {advice}" if advice else ""
    where = f"`{f.file}:{f.line}`"
    return (
        f"- {where} — {message} ({f.rule}, confidence {f.confidence.value}){fix} "
        f"— found by {', '.join(members)}"
    )
