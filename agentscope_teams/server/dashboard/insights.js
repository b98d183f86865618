// What a team costs and what went wrong in it: usage per participant (tokens, cost) and the errors
// panel, both polled while the team is open (operator tokens only: they read sessions). Also the
// number formats shared with the sessions and conversation views. Text nodes only.
"use strict";

const fmtInt = (n) => Number(n || 0).toLocaleString("en-US");
// A cost the usage records carry, else "—" (unknown is not zero).
// A cost too small for 4 decimals reads "<$0.0001", not "$0.0000"; an unknown one reads "—".
const fmtCost = (usd) => {
  if (typeof usd !== "number") return "—";
  if (usd > 0 && usd < 0.0001) return "<$0.0001";
  return `$${usd.toFixed(usd >= 1 ? 2 : 4)}`;
};
const fmtTokens = (u) => `${fmtInt(u.input_tokens)} in · ${fmtInt(u.output_tokens)} out`;
const ENDED = new Set(["done", "completed", "deleted", "archived"]);

// A team is ended once its status says so or it carries an end time (tolerates records without one).
function teamEnded(team) {
  return ENDED.has(team.status) || Boolean(team.ended_at);
}

function teamTimes(team) {
  const parts = [];
  if (team.created_at) parts.push(`created ${fmtTime(team.created_at)}`);
  if (team.ended_at) parts.push(`ended ${fmtTime(team.ended_at)}`);
  return parts.join(" · ");
}

function sessionHash(agentId, sessionId) {
  return `#session/${encodeURIComponent(agentId)}/${encodeURIComponent(sessionId)}`;
}

async function loadInsights(teamId) {
  if (state.me?.kind !== "operator") return;
  const base = `/api/teams/${encodeURIComponent(teamId)}`;
  try {
    const [usage, errors] = await Promise.all([api("GET", `${base}/usage`), api("GET", `${base}/errors`)]);
    if (state.team?.id !== teamId) return;
    state.team.usage = usage;
    state.team.errors = errors;
  } catch (err) {
    if (err instanceof AuthError) return showLogin(err.message);
    return; // the team may have been deleted meanwhile: its stream says so
  }
  renderInsights();
  scheduleRender(); // the member chips show tokens and open sessions
}

function participant(name) {
  return state.team?.usage?.participants.find((p) => p.name === name) || null;
}

function renderInsights() {
  const t = state.team;
  if (!t?.usage) return;
  $("insights").hidden = false;
  $("usage-body").replaceChildren(...t.usage.participants.map((p) => h("tr", {
    "data-usage": p.name, class: p.session_id ? "clickable" : "",
    onclick: p.session_id ? () => { location.hash = sessionHash(p.agent_id, p.session_id); } : null,
  },
  h("td", {}, h("strong", {}, p.name), h("span", { class: "muted small" }, ` ${p.role}`)),
  h("td", {}, p.model || "—"), h("td", {}, fmtInt(p.requests)),
  h("td", {}, fmtInt(p.input_tokens)), h("td", {}, fmtInt(p.output_tokens)),
  h("td", { class: "cost" }, fmtCost(p.cost_usd)))));
  const total = t.usage.total;
  $("usage-total").replaceChildren(h("tr", { "data-usage": "total" },
    h("td", {}, "Team total"), h("td", {}, ""), h("td", {}, fmtInt(total.requests)),
    h("td", {}, fmtInt(total.input_tokens)), h("td", {}, fmtInt(total.output_tokens)),
    h("td", { class: "cost" }, fmtCost(total.cost_usd))));
  renderErrors(t.errors || []);
}

// One label per kind of server/error_reads.py.
const KIND_LABELS = {
  task_failed: "task failed", lease_expired: "member crash", member_failed: "member crash",
  member_crash: "member crash", call_failed: "call failed", model_error: "model error",
  budget_stop: "budget stop", hook_block: "hook block", permission_denied: "permission denied",
  sandbox_denial: "sandbox denial", run_failed: "subagent failed", tool_error: "tool error",
  hook_block_after_tool: "hook block after tool",
};

// A budget stop says which budget and by how much it went over: the server's summary, the text
// the lead's [budget] note has (agent/failures.py, BudgetOverrun.summary).
function budgetLine(e) {
  if (e.kind !== "budget_stop" || !e.summary) return null;
  return h("div", { class: "budget" }, e.summary);
}

// Who refused: a sandbox denial's reason (and the permission engine's cause), the hook that
// blocked after a tool ran.
function refusalLine(e) {
  if (e.kind === "sandbox_denial" && e.reason) {
    return h("div", { class: "refusal" }, `refused: ${e.reason}${e.cause ? ` (${e.cause})` : ""}`);
  }
  if (e.kind === "hook_block_after_tool" && e.hook) {
    return h("div", { class: "refusal" }, `hook: ${e.hook}`);
  }
  return null;
}

function renderErrors(errors) {
  $("errors").replaceChildren(...errors.map((e) => h("li", { "data-kind": e.kind },
    h("span", { class: "kind" }, KIND_LABELS[e.kind] || e.kind),
    h("strong", {}, e.who || "—"), " ", e.what,
    e.at ? h("span", { class: "muted small" }, ` ${fmtTime(e.at)}`) : null,
    e.session_id ? h("a", { href: sessionHash(e.agent_id, e.session_id), class: "small" }, " open conversation") : null,
    budgetLine(e), refusalLine(e),
    e.detail ? h("div", { class: "detail" }, e.detail) : null)));
  $("error-count").textContent = String(errors.length);
  $("no-errors").hidden = errors.length > 0;
}
