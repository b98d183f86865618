// The timeline of a team: who worked on which task when. Each claim of a task starts a bar on the
// claiming member's row; the task's next history event (completed, failed, released, lease
// expired, cancelled) ends it, and a task still in progress runs to now. Positions are set through
// the CSSOM (allowed by the CSP, unlike style attributes); labels are text nodes.
"use strict";

function workSpans(tasks) {
  const spans = [];
  for (const task of tasks) {
    task.history.forEach((e, i) => {
      if (e.action !== "claimed") return;
      const next = task.history[i + 1];
      const running = !next && task.status === "in_progress";
      spans.push({ who: e.actor, task, start: Date.parse(e.at), end: next ? Date.parse(next.at) : Date.now(),
        outcome: next ? next.action : (running ? "running" : task.status) });
    });
  }
  return spans;
}

function renderWorkTimeline() {
  const spans = workSpans([...t().tasks.values()]);
  $("work-timeline").hidden = spans.length === 0;
  if (!spans.length) return;
  const from = Math.min(...spans.map((s) => s.start));
  const to = Math.max(...spans.map((s) => s.end), from + 1000);
  const who = [...new Set(spans.map((s) => s.who))].sort();
  $("work-range").textContent = `${fmtTime(new Date(from).toISOString())} – ${fmtTime(new Date(to).toISOString())}`;
  $("work-rows").replaceChildren(...who.map((name) => h("div", { class: "work-row", "data-who": name },
    h("span", { class: "work-who" }, name),
    h("div", { class: "work-track" }, spans.filter((s) => s.who === name).map((s) => {
      const bar = h("span", { class: `work-bar o-${s.outcome}`, "data-task-id": s.task.id,
        title: `${s.task.title} (${s.outcome}) ${fmtTime(new Date(s.start).toISOString())} – ${fmtTime(new Date(s.end).toISOString())}` },
      s.task.title);
      bar.style.left = `${((s.start - from) / (to - from)) * 100}%`;
      bar.style.width = `${Math.max(((s.end - s.start) / (to - from)) * 100, 1.5)}%`;
      return bar;
    })))));
}
