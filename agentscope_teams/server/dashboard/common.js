// agentscope-teams dashboard, shared part: state, DOM helper, token and API calls.
// Plain scripts loaded in order (common.js, team.js, app.js); no build step. Every value from the
// server is inserted as text, never as HTML.
"use strict";

const TOKEN_KEY = "agentscope-teams-token";
const STATUSES = [
  ["pending", "Pending"],
  ["in_progress", "In progress"],
  ["completed", "Completed"],
  ["failed", "Failed"],
  ["cancelled", "Cancelled"],
];
const $ = (id) => document.getElementById(id);

const state = {
  token: null,
  me: null,
  teams: [],
  team: null, // {id, info, tasks: Map, members: Map, messages: Map}
  source: null,
  retry: null,
  openHistory: new Set(),
  renderQueued: false,
  session: null, // the open conversation: {agentId, sessionId}
  traceUrl: null, // the OTLP UI's trace URL template ("...{trace_id}"), from /dashboard/config
};

fetch("/dashboard/config").then((r) => r.ok ? r.json() : {}).then((c) => {
  state.traceUrl = typeof c.trace_url === "string" && c.trace_url.includes("{trace_id}") ? c.trace_url : null;
  if (state.traceUrl && state.team) scheduleRender(); // a team opened before the answer came
}).catch(() => {});

// ---- small DOM helper: h("div", {class: "x"}, "text", child) ----
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

function badge(status) {
  return h("span", { class: `badge s-${status}` }, String(status).replace("_", " "));
}

// ---- token and API ----
function takeTokenFromUrl() {
  const url = new URL(window.location.href);
  const token = url.searchParams.get("token");
  if (token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    url.searchParams.delete("token");
    history.replaceState(null, "", url.pathname + url.search + url.hash);
  }
}

class AuthError extends Error {}

async function api(method, path, body) {
  const opts = { method, headers: { Authorization: `Bearer ${state.token}` } };
  if (body !== undefined) {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body);
  }
  const res = await fetch(path, opts);
  if (res.status === 204) return null;
  const data = await res.json().catch(() => null);
  if (res.status === 401) throw new AuthError(data?.error?.message || "token rejected");
  if (!res.ok) throw new Error(data?.error?.message || `${method} ${path}: HTTP ${res.status}`);
  return data;
}

function showLogin(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  closeStream();
  $("shell").hidden = true;
  $("logout").hidden = true;
  $("login").hidden = false;
  $("login-error").hidden = !message;
  $("login-error").textContent = message || "";
  $("identity").textContent = "";
}

function showError(err) {
  if (err instanceof AuthError) return showLogin(err.message);
  $("main-error").hidden = false;
  $("main-error").textContent = String(err.message || err);
}

