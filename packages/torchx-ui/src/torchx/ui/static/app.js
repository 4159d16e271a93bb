// torchx ui: the list page. Every value from the server is put in the page as text
// (textContent, createElement), never as markup: an app named "<img src=x onerror=...>"
// shows as those characters. The token reaches the server as a cookie set when the page
// was opened with ?token=..., so fetch() and EventSource carry it without code here.
"use strict";

const STATES = ["UNSUBMITTED", "SUBMITTED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED",
  "CANCELLED", "UNKNOWN"];
let latest = null; // the newest UiApps document

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function pad(n) { return String(n).padStart(2, "0"); }

// Local time to the second, as `torchx list` prints STARTED.
function formatTime(epoch) {
  if (epoch === null || epoch === undefined) return "-";
  const d = new Date(epoch * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// As the CLI's DURATION column (torchx.specs.status.format_duration): "42.2s" under a
// minute, then whole seconds in the two largest units: "5m3s", "1h30m", "1d12h".
function formatDuration(seconds) {
  if (seconds === null || seconds === undefined) return "-";
  if (seconds < 60) return `${Math.max(seconds, 0).toFixed(1)}s`;
  let rest = Math.floor(seconds);
  const parts = [];
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]]) {
    const count = Math.floor(rest / size);
    rest -= count * size;
    if (count || parts.length) parts.push([count, unit]);
  }
  return parts.slice(0, 2).filter(([count]) => count).map(([c, u]) => `${c}${u}`).join("");
}

// A running app's duration grows by itself: counted here from its start, to now.
function duration(app) {
  if (app.state === "RUNNING" && app.start_time !== null && app.end_time === null) {
    return Math.max(Date.now() / 1000 - app.start_time, 0);
  }
  return app.duration_s;
}

function fillSelect(select, values) {
  const chosen = select.value;
  while (select.options.length > 1) select.remove(1);
  for (const v of values) select.add(new Option(v, v));
  select.value = values.includes(chosen) ? chosen : "";
}

function render() {
  if (latest === null) return;
  const name = document.getElementById("filter-name").value.toLowerCase();
  const state = document.getElementById("filter-state").value;
  const scheduler = document.getElementById("filter-scheduler").value;
  const tbody = document.getElementById("rows");
  const rows = [];
  const apps = [];
  for (const feed of latest.data.schedulers) {
    if (scheduler && feed.scheduler !== scheduler) continue;
    if (feed.error !== null) {
      const tr = el("tr", null, "scheduler-error");
      tr.dataset.scheduler = feed.scheduler;
      const td = el("td", `${feed.scheduler}: cannot list its apps: ${feed.error}`);
      td.colSpan = 5;
      const stale = feed.listed_at === null ? " (never listed)"
        : ` (its apps as of ${formatTime(feed.listed_at)})`;
      td.append(el("span", stale, "stale"));
      tr.append(td);
      rows.push(tr);
    }
    for (const app of feed.apps) apps.push(app);
  }
  apps.sort((a, b) => (b.start_time ?? 0) - (a.start_time ?? 0));
  let shown = 0;
  for (const app of apps) {
    if (state && app.state !== state) continue;
    if (name && !app.name.toLowerCase().includes(name) &&
        !app.handle.toLowerCase().includes(name)) continue;
    const tr = el("tr");
    tr.dataset.handle = app.handle;
    tr.append(el("td", app.handle, "handle"), el("td", app.name, "name"),
      el("td", app.state, `state state-${app.state}`), el("td", formatTime(app.start_time)),
      el("td", formatDuration(duration(app)), "duration"));
    rows.push(tr);
    shown += 1;
  }
  tbody.replaceChildren(...rows);
  document.getElementById("empty").hidden = shown > 0;
  document.getElementById("count").textContent = `${shown} of ${apps.length} apps`;
}

function receive(doc) {
  if (latest !== null && doc.data.generation < latest.data.generation) return;
  latest = doc;
  fillSelect(document.getElementById("filter-scheduler"),
    doc.data.schedulers.map((feed) => feed.scheduler));
  render();
}

function connect() {
  const status = document.getElementById("connection");
  const events = new EventSource("/api/events");
  events.addEventListener("open", () => {
    status.textContent = "live";
    status.className = "connection live";
  });
  events.addEventListener("apps", (e) => receive(JSON.parse(e.data)));
  events.addEventListener("error", () => {
    status.textContent = "connection lost: retrying";
    status.className = "connection lost";
  });
}

document.addEventListener("DOMContentLoaded", () => {
  fillSelect(document.getElementById("filter-state"), STATES);
  for (const id of ["filter-name", "filter-state", "filter-scheduler"]) {
    document.getElementById(id).addEventListener("input", render);
  }
  // the token stays out of the address bar (and the history) once its cookie is set
  if (window.location.search.includes("token=")) window.history.replaceState(null, "", "/");
  connect();
  window.setInterval(render, 1000); // running apps' durations
});
