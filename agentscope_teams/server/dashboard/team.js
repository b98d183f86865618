// The live team view: an EventSource per open team, the task board and the mailbox timeline.
// Every event carries an id; a reconnect (a new EventSource, with a new ticket) passes the last id
// seen as ?last_event_id= and the server sends only what came after it.
"use strict";

// ---- live team view ----
function closeStream() {
  if (state.source) state.source.close();
  state.source = null;
  clearTimeout(state.retry);
  setLive("off", "offline");
}

function setLive(mode, text) {
  $("live").hidden = mode === "off" && !state.team;
  $("live").dataset.state = mode;
  $("live").textContent = text;
}

async function openTeam(teamId) {
  closeStream();
  state.team = { id: teamId, info: null, tasks: new Map(), members: new Map(), messages: new Map(), lastEventId: "" };
  state.openHistory.clear();
  $("view-team").hidden = false;
  $("insights").hidden = true;
  renderTeamList();
  loadInsights(teamId);
  try {
    const info = await api("GET", `/api/teams/${encodeURIComponent(teamId)}`);
    if (state.team?.id !== teamId) return;
    state.team.info = info;
    for (const m of info.members) state.team.members.set(m.name, m);
  } catch (err) {
    return showError(err);
  }
  scheduleRender();
  connect(teamId);
}

async function connect(teamId) {
  if (state.team?.id !== teamId) return;
  setLive("connecting", "connecting…");
  let ticket;
  try {
    ticket = (await api("POST", `/api/teams/${encodeURIComponent(teamId)}/events/ticket`)).token;
  } catch (err) {
    if (err instanceof AuthError) return showLogin(err.message);
    return retry(teamId);
  }
  if (state.team?.id !== teamId) return;
  const resume = state.team.lastEventId ? `&last_event_id=${encodeURIComponent(state.team.lastEventId)}` : "";
  const es = new EventSource(`/api/teams/${encodeURIComponent(teamId)}/events?ticket=${encodeURIComponent(ticket)}${resume}`);
  state.source = es;
  es.onopen = () => setLive("live", "live");
  es.onerror = () => {
    es.close();
    if (state.source === es) retry(teamId);
  };
  const on = (name, fn) => es.addEventListener(name, (ev) => {
    if (state.source !== es || state.team?.id !== teamId) return;
    if (ev.lastEventId) state.team.lastEventId = ev.lastEventId;
    state.team.received = (state.team.received || 0) + 1;
    fn(JSON.parse(ev.data));
    scheduleRender();
  });
  on("task", (task) => state.team.tasks.set(task.id, task));
  on("member", (data) => state.team.members.set(data.member.name, data.member));
  on("message", (msg) => state.team.messages.set(`${msg.recipient}:${msg.seq}`, msg));
  on("team", (team) => {
    if (team.status === "deleted") {
      state.team.info = { ...(state.team.info || {}), status: "deleted" };
      es.close();
      setLive("off", "team deleted");
      refreshTeams();
      return;
    }
    state.team.info = team;
  });
}

function retry(teamId) {
  setLive("retry", "reconnecting…");
  state.retry = setTimeout(() => connect(teamId), 2000);
}

function scheduleRender() {
  if (state.renderQueued) return;
  state.renderQueued = true;
  requestAnimationFrame(() => {
    state.renderQueued = false;
    if (state.team) renderTeam();
  });
}

function renderTeam() {
  const t = state.team;
  const info = t.info || { name: t.id, status: "", lead: "" };
  $("team-name").textContent = info.name;
  $("team-status").replaceChildren(badge(info.status || "unknown"));
  $("team-id").textContent = t.id;
  $("team-times").textContent = teamTimes(info);
  const trace = traceId(info.trace_context);
  $("team-trace").replaceChildren(...(trace ? ["trace ", traceLink(trace, trace)] : []));
  renderMembers(info);
  renderBoard();
  renderWorkTimeline();
  renderTimeline();
}

function renderMembers(info) {
  const chips = [chip(info.lead, "member lead", {}, h("span", { class: "muted small" }, "lead"))];
  for (const m of t().members.values()) {
    chips.push(chip(m.name, "member", { "data-status": m.status },
      m.spec ? h("span", { class: "muted small" }, m.spec) : null, badge(m.status), memberNotes(m)));
  }
  $("members").replaceChildren(...chips);
}

// A participant's chip; once its session is known (usage), it shows its tokens and a click opens
// its conversation.
function chip(name, cls, attrs, ...rest) {
  const p = participant(name);
  const open = p?.session_id ? () => { location.hash = sessionHash(p.agent_id, p.session_id); } : null;
  return h("div", { class: cls, "data-member": name, "data-session": p?.session_id || null, onclick: open, ...attrs },
    h("strong", {}, name), ...rest,
    p ? h("span", { class: "tokens" }, `${fmtInt(p.input_tokens + p.output_tokens)} tok · ${fmtCost(p.cost_usd)}`) : null);
}

// What a member waits for: its plan, on the lead's approval; a call it was refused for want of an
// approver (a member has no one to ask). Text nodes only, as everything from the server.
function memberNotes(m) {
  const notes = [];
  if (m.plan && m.plan.status === "pending") {
    notes.push(h("span", { class: "member-note", "data-note": "plan" }, "plan waiting for the lead's approval"));
  }
  if (m.permission_prompt) {
    const p = m.permission_prompt;
    notes.push(h("span", { class: "member-note", "data-note": "prompt", title: fmtTime(p.at) },
      `${p.tool} refused: needs approval`));
  }
  if (m.stop) {  // a hook's continue: false: it takes no work until resumed (team resume)
    notes.push(h("span", { class: "member-note", "data-note": "stop", title: fmtTime(m.stop.at) },
      `stopped by a ${m.stop.event} hook: ${m.stop.reason}`));
  }
  return notes;
}

const t = () => state.team;

// The trace id of a stored W3C trace context ({traceparent: "00-<trace id>-<span id>-01"}).
function traceId(context) {
  const parts = (context?.traceparent || "").split("-");
  return parts.length === 4 && parts[1].length === 32 ? parts[1] : null;
}

// A link to the trace in the OTLP UI the server was configured with, else plain text.
function traceLink(trace, text) {
  const url = state.traceUrl ? state.traceUrl.replace("{trace_id}", trace) : null;
  return url ? h("a", { href: url, target: "_blank", rel: "noopener", "data-trace": trace }, text) : text;
}

function taskCard(task) {
  const meta = [];
  if (task.owner) meta.push(h("span", {}, "owner ", h("strong", {}, task.owner)));
  if (task.assignee && task.assignee !== task.owner) meta.push(h("span", {}, "for ", h("strong", {}, task.assignee)));
  if (task.attempts) meta.push(h("span", {}, `attempt ${task.attempts}/${task.max_attempts}`));
  const trace = traceId(task.trace_context);
  if (trace && state.traceUrl) meta.push(h("span", {}, traceLink(trace, "trace")));
  const details = h("details", { class: "history", open: state.openHistory.has(task.id) },
    h("summary", {}, `History (${task.history.length})`),
    h("ol", {}, task.history.map((e) => h("li", {},
      h("span", { class: "muted small" }, fmtTime(e.at)), " ",
      h("strong", {}, e.actor), ` ${e.action}`, e.detail ? h("span", { class: "muted" }, ` — ${e.detail}`) : null))));
  details.addEventListener("toggle", () => {
    if (details.open) state.openHistory.add(task.id); else state.openHistory.delete(task.id);
  });
  return h("article", { class: "card", "data-task-id": task.id, "data-status": task.status },
    h("div", { class: "card-head" }, h("span", { class: "mono muted" }, task.id), h("span", { class: "title" }, task.title)),
    task.description ? h("p", { class: "desc" }, task.description) : null,
    meta.length ? h("div", { class: "meta" }, meta) : null,
    task.blocked_by.length ? h("div", { class: "blockers" }, "depends on ", task.blocked_by.map((id, i) => {
      const status = t().tasks.get(id)?.status || "unknown";
      return h("span", { class: `dep s-${status}` }, i ? `, ${id} (${status.replace("_", " ")})` : `${id} (${status.replace("_", " ")})`);
    })) : null,
    task.blocked_reason ? h("div", { class: "warn" }, task.blocked_reason) : null,
    task.result ? h("div", { class: "result" }, task.result) : null,
    task.error ? h("div", { class: "error-text" }, task.error) : null,
    details);
}

function renderBoard() {
  const tasks = [...t().tasks.values()].sort((a, b) => a.seq - b.seq);
  $("board").replaceChildren(...STATUSES.map(([status, label]) => {
    const mine = tasks.filter((x) => x.status === status);
    return h("section", { class: "column", "data-status": status },
      h("h3", {}, label, h("span", { class: "count" }, String(mine.length))),
      h("div", { class: "cards" }, mine.map(taskCard)));
  }));
}

function renderTimeline() {
  // A broadcast is one message per recipient: show it once, with every recipient.
  const entries = [];
  const sorted = [...t().messages.values()].sort((a, b) => a.sent_at.localeCompare(b.sent_at));
  for (const m of sorted) {
    const last = entries[entries.length - 1];
    if (m.broadcast && last && last.broadcast && last.sender === m.sender && last.content === m.content
        && Date.parse(m.sent_at) - Date.parse(last.sent_at) < 5000) {
      last.recipients.push(m.recipient);
      continue;
    }
    entries.push({ ...m, recipients: [m.recipient] });
  }
  const list = $("timeline");
  const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
  list.replaceChildren(...entries.map((m) =>
    h("li", { class: `message${m.broadcast ? " broadcast" : ""}`, "data-sender": m.sender },
      h("div", { class: "message-head" },
        h("strong", {}, m.sender), " → ", m.broadcast ? `everyone (${m.recipients.join(", ")})` : m.recipient,
        h("span", { class: "muted small" }, fmtTime(m.sent_at))),
      h("div", { class: "content" }, m.content))));
  $("message-count").textContent = String(entries.length);
  if (atBottom) list.scrollTop = list.scrollHeight;
}

