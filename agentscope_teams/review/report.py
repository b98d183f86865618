"""``render_markdown``: the lead's review.md from the findings each member reported."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from .findings import Finding, Severity


def render_markdown(
    findings_by_member: Mapping[str, Sequence[Finding]],
    target: str,
    model_label: str,
    clean_files: Iterable[str] | None = None,
) -> str:
    """review.md: title, target, model, counts by severity, then findings grouped by severity.

    A finding reported by several members appears once, crediting all of them.
    """
    merged: dict[tuple[str, int, str, str], tuple[Finding, list[str]]] = {}
    for member, findings in findings_by_member.items():
        for f in findings:
            key = (f.file, f.line, f.rule, f.message)
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
            message = " ".join(f.message.split())
            lines.append(
                f"- `{f.file}:{f.line}` — {message} ({f.rule}) — found by {', '.join(members)}"
            )
    clean = sorted(set(clean_files or ()))
    if clean:
        lines += [
            "",
            "## Clean files",
            "",
            "No findings in " + ", ".join(f"`{c}`" for c in clean) + ".",
        ]
    return "\n".join(lines) + "\n"
