// Start-up, login, navigation, the teams list, sessions and subagent runs.
"use strict";

async function start() {
  state.token = sessionStorage.getItem(TOKEN_KEY);
  if (!state.token) return showLogin();
  try {
    state.me = await api("GET", "/api/whoami");
  } catch (err) {
    return showLogin(err.message);
  }
  const me = state.me;
  const who = [me.user_id || "anonymous", me.org_id ? `@ ${me.org_id}` : ""].join(" ");
  $("identity").textContent = me.kind === "member" ? `${me.member} in ${me.team_id} (${who})` : `${who} (operator)`;
  $("login").hidden = true;
  $("shell").hidden = false;
  $("logout").hidden = false;
  for (const id of ["nav-sessions", "nav-runs"]) $(id).parentElement.hidden = me.kind !== "operator";
  await refreshTeams();
  route();
}

// ---- navigation ----
function route() {
  const hash = decodeURIComponent(location.hash.slice(1));
  $("main-error").hidden = true;
  for (const v of ["empty", "team", "sessions", "runs", "session"]) $(`view-${v}`).hidden = true;
  if (!hash.startsWith("session/")) state.session = null;
  else if (state.team) $("session-back").href = `#team/${encodeURIComponent(state.team.id)}`; // back to its team
  else $("session-back").href = "#sessions";
  if (hash.startsWith("team/")) return openTeam(hash.slice(5));
  state.team = null;
  closeStream();
  renderTeamList();
  if (hash.startsWith("session/")) {
    const [agentId, sessionId] = location.hash.slice(9).split("/").map(decodeURIComponent);
    return openSession(agentId, sessionId || "");
  }
  if (hash === "sessions") return loadSessions();
  if (hash === "runs") return loadRuns();
  $("view-empty").hidden = false;
  if (state.teams.length === 1 && !hash) location.hash = `team/${state.teams[0].id}`;
}

async function refreshTeams() {
  try {
    state.teams = await api("GET", "/api/teams?all=true"); // ended ones too: the list filters
  } catch (err) {
    return showError(err);
  }
  renderTeamList();
}

// The teams the filter (active / ended / all) and the search (name, id, description) keep, newest
// first; the open team is always listed.
function shownTeams() {
  const which = $("team-filter").value;
  const words = $("team-search").value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  return state.teams.filter((t) => {
    if (state.team?.id === t.id) return true;
    if (which === "active" && teamEnded(t)) return false;
    if (which === "ended" && !teamEnded(t)) return false;
    const text = `${t.name} ${t.id} ${t.description || ""}`.toLowerCase();
    return words.every((w) => text.includes(w));
  }).sort((a, b) => String(b.created_at || "").localeCompare(String(a.created_at || "")));
}

function renderTeamList() {
  const shown = shownTeams();
  $("team-list").replaceChildren(
    ...shown.map((t) =>
      h("li", { class: state.team?.id === t.id ? "active" : "", "data-ended": teamEnded(t) ? "yes" : "no" },
        h("a", { href: `#team/${encodeURIComponent(t.id)}`, "data-team-id": t.id },
          h("span", { class: "team-title" }, t.name),
          h("span", { class: "muted small" }, `${t.members.length} member${t.members.length === 1 ? "" : "s"} · ${t.status}`),
          h("span", { class: "muted small team-when" }, teamTimes(t))))));
  $("no-teams").hidden = state.teams.length > 0;
  $("no-match").hidden = state.teams.length === 0 || shown.length > 0;
}

// ---- sessions and subagent runs (polled) ----
async function loadSessions() {
  $("view-sessions").hidden = false;
  try {
    const rows = await api("GET", "/api/sessions");
    $("sessions-body").replaceChildren(...rows.map((s) => h("tr", {
      class: "clickable", "data-session": s.session_id, onclick: () => { location.hash = sessionHash(s.agent_id, s.session_id); },
    },
    h("td", {}, s.agent_id), h("td", { class: "mono" }, s.session_id, deferredBadge(s.deferred)), h("td", {}, s.source),
    h("td", {}, String(s.messages)), h("td", { class: "model" }, s.model || "—"),
    h("td", { class: "tokens" }, fmtTokens(s)), h("td", { class: "cost" }, fmtCost(s.cost_usd)),
    h("td", {}, String(s.version)), h("td", {}, fmtTime(s.updated_at)))));
    $("sessions-empty").hidden = rows.length > 0;
  } catch (err) {
    showError(err);
  }
}

// A session whose tool calls a PreToolUse hook deferred: what waits, and why (in its title).
function deferredBadge(calls) {
  if (!calls || !calls.length) return null;
  const title = calls.map((c) => `${c.name}${c.reason ? `: ${c.reason}` : ""}`).join("\n");
  return h("span", { class: "badge deferred", title }, ` deferred: ${calls.map((c) => c.name).join(", ")}`);
}

async function loadRuns() {
  $("view-runs").hidden = false;
  try {
    const rows = await api("GET", "/api/subagent-runs");
    $("runs-body").replaceChildren(...rows.map((r) => h("tr", { "data-run-id": r.run_id },
      h("td", { class: "mono" }, r.run_id),
      h("td", {}, r.spec, r.label ? h("span", { class: "muted" }, ` (${r.label})`) : null),
      h("td", {}, badge(r.status), (r.status === "running" || r.status === "pending") && !r.lease_alive
        ? h("span", { class: "warn small" }, " no live lease") : null),
      h("td", { class: "mono" }, r.parent_session),
      h("td", { class: "task-cell", title: r.task }, r.task),
      h("td", {}, fmtTime(r.started_at)), h("td", {}, fmtTime(r.ended_at)))));
    $("runs-empty").hidden = rows.length > 0;
  } catch (err) {
    showError(err);
  }
}

// ---- wiring ----
document.addEventListener("DOMContentLoaded", () => {
  takeTokenFromUrl();
  $("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("token-input").value.trim());
    $("token-input").value = "";
    start();
  });
  $("logout").addEventListener("click", () => showLogin());
  $("team-search").addEventListener("input", renderTeamList);
  $("team-filter").addEventListener("change", renderTeamList);
  window.addEventListener("hashchange", route);
  setInterval(() => {
    if (!state.token || !state.me) return;
    refreshTeams();
    const hash = location.hash.slice(1);
    if (hash === "sessions") loadSessions();
    if (hash === "runs") loadRuns();
  }, 5000);
  // Usage, errors and an open conversation change with every model step: read them more often.
  setInterval(() => {
    if (!state.token || !state.me) return;
    if (state.team) loadInsights(state.team.id);
    if (state.session) openSession(state.session.agentId, state.session.sessionId);
  }, 2000);
  start();
});
