// The conversation view of one session (#session/<agent>/<session>): its messages, tool calls and
// their results, the tool call running now, a pause for approval (HITL) and the calls a PreToolUse
// hook deferred (with the hook's reason), polled while open.
// Everything from the session is inserted as text.
"use strict";

async function openSession(agentId, sessionId) {
  $("view-session").hidden = false;
  state.session = { agentId, sessionId };
  let record;
  try {
    record = await api("GET", `/api/sessions/${encodeURIComponent(agentId)}/${encodeURIComponent(sessionId)}`);
  } catch (err) {
    return showError(err);
  }
  if (state.session?.agentId !== agentId || state.session?.sessionId !== sessionId) return;
  renderSession(record);
}

function blocksOf(msg) {
  return typeof msg.content === "string" ? [{ type: "text", text: msg.content }] : msg.content;
}

function renderSession(record) {
  const st = record.state;
  $("session-agent").textContent = record.agent_id;
  $("session-model").textContent = record.config.model || "model unknown";
  $("session-id").textContent = record.session_id;
  const answered = new Set();
  for (const m of st.context) for (const b of blocksOf(m)) if (b.type === "tool_result") answered.add(b.tool_use_id);
  const asking = new Set(st.awaiting_confirmation || []);
  const deferred = new Set(st.deferred_tool_calls || []);
  const reasons = st.deferred_reasons || {};
  const calls = st.context.flatMap((m) => blocksOf(m).filter((b) => b.type === "tool_use"));
  const open = calls.filter((c) => !answered.has(c.id));
  const u = st.usage || {};
  const costs = st.context.map((m) => m.metadata?.cost_usd).filter((c) => typeof c === "number");
  $("session-usage").textContent = `${fmtInt(u.requests)} model requests · ${fmtTokens(u)} tokens · cost ${
    fmtCost(costs.length ? costs.reduce((a, b) => a + b, 0) : null)} · updated ${fmtTime(record.updated_at)}`;
  $("session-state").replaceChildren(
    ...open.filter((c) => deferred.has(c.id)).map((c) => h("div", { class: "pause deferred", "data-deferred": c.id },
      h("strong", {}, "Deferred by a PreToolUse hook: "), c.name, h("span", { class: "mono small" }, ` ${argText(c.input)}`),
      h("div", { class: "small" }, reasons[c.id] ? `Reason: ${reasons[c.id]}` : "The hook gave no reason."),
      h("div", { class: "muted small" }, "Not run. The next call on this session runs its hook again."))),
    ...open.filter((c) => !deferred.has(c.id) && asking.has(c.id)).map((c) => h("div", { class: "pause", "data-pause": c.id },
      h("strong", {}, "Waiting for approval: "), c.name, h("span", { class: "mono small" }, ` ${argText(c.input)}`))),
    ...open.filter((c) => !deferred.has(c.id) && !asking.has(c.id)).map((c) => h("div", { class: "running", "data-running": c.id },
      h("strong", {}, "Running now: "), c.name, h("span", { class: "mono small" }, ` ${argText(c.input)}`))));
  const turns = [];
  if (st.summary) turns.push(h("li", { class: "turn", "data-role": "summary" },
    h("div", { class: "turn-head" }, h("strong", {}, "summary of earlier turns")), h("div", { class: "block-text" }, st.summary)));
  for (const m of st.context) turns.push(turn(m, answered, asking, deferred));
  $("conversation").replaceChildren(...turns);
  $("conversation-empty").hidden = st.context.length > 0 || Boolean(st.summary);
}

function argText(input) {
  const text = JSON.stringify(input ?? {});
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

function turn(m, answered, asking, deferred) {
  const usage = m.metadata?.usage;
  return h("li", { class: "turn", "data-role": m.role, "data-message": m.id },
    h("div", { class: "turn-head" }, h("strong", {}, m.name), m.role,
      h("span", {}, fmtTime(m.created_at)),
      usage ? h("span", {}, `${fmtTokens(usage)} tokens`) : null,
      typeof m.metadata?.cost_usd === "number" ? h("span", {}, fmtCost(m.metadata.cost_usd)) : null),
    blocksOf(m).map((b) => block(b, answered, asking, deferred)));
}

function block(b, answered, asking, deferred) {
  if (b.type === "text") return h("div", { class: "block-text" }, b.text);
  if (b.type === "tool_use") {
    const running = !answered.has(b.id);
    const cls = `block-tool${running ? " is-running" : ""}`;
    const note = !running ? "" : deferred.has(b.id) ? " (deferred by a hook)"
      : asking.has(b.id) ? " (waiting for approval)" : " (running)";
    return h("div", { class: cls, "data-tool-call": b.id },
      h("strong", {}, `→ ${b.name}`), h("span", { class: "muted" }, note), h("pre", {}, JSON.stringify(b.input, null, 2)));
  }
  if (b.type === "tool_result") {
    return h("div", { class: `block-tool${b.is_error ? " is-error" : ""}`, "data-tool-result": b.tool_use_id },
      h("strong", {}, `← ${b.name || "result"}`), b.is_error ? h("span", { class: "error-text" }, " error") : null,
      h("pre", {}, b.output));
  }
  return h("div", { class: "block-tool" }, h("pre", {}, JSON.stringify(b.data ?? b, null, 2)));
}
