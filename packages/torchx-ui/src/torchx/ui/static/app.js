// torchx ui: the list of apps (#) and one app's page (#app=HANDLE). Every value from the
// server is put in the page as text (textContent, createElement), never as markup: an
// app named "<img src=x onerror=...>" or a log line "<script>" shows as those characters.
// The token reaches the server as a cookie set when the page was opened with ?token=...,
// so fetch() and EventSource carry it without code here; a POST (cancel, delete) sends it in the
// X-TorchX-Token header, from the page's meta tag, as the server requires.
"use strict";

const STATES = ["UNSUBMITTED", "SUBMITTED", "PENDING", "RUNNING", "SUCCEEDED", "FAILED",
  "CANCELLED", "UNKNOWN"];
const ENDED = ["SUCCEEDED", "FAILED", "CANCELLED"];
const LOG_KEEP = 5000; // lines of a followed log the page holds (older ones are dropped)
let latest = null; // the newest UiApps document
let shownApp = null; // {handle, listed: the list row last seen, log: EventSource}
// The replicas column: "running/total" of the rows on screen only. The page names them to
// the server (POST /api/replicas), which describes just those (an ended app once) and
// sends their counts as "replicas" events.
const counts = new Map(); // handle -> "running/total" (or "?": the describe failed)
let countCells = new Map(); // handle -> the replicas cell of its row in the table
let watchedKey = ""; // the handles last named to the server
let watchedAt = 0; // when (Date.now())
const WATCH_AGAIN_MS = 20000; // name them again this often (the server forgets after 60 s)
const WATCH_MAX = 200; // the most the server takes at once

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
      td.colSpan = 6;
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
  const cells = new Map();
  for (const app of apps) {
    if (state && app.state !== state) continue;
    if (name && !app.name.toLowerCase().includes(name) &&
        !app.handle.toLowerCase().includes(name)) continue;
    const tr = el("tr");
    tr.dataset.handle = app.handle;
    tr.addEventListener("click", () => { window.location.hash = appHash(app.handle); });
    tr.append(el("td", app.handle, "handle"), el("td", app.name, "name"),
      el("td", app.state, `state state-${app.state}`), el("td", formatTime(app.start_time)),
      el("td", formatDuration(duration(app)), "duration"));
    const cell = el("td", counts.get(app.handle) ?? "", "replicas");
    tr.append(cell);
    cells.set(app.handle, cell);
    rows.push(tr);
    shown += 1;
  }
  tbody.replaceChildren(...rows);
  countCells = cells;
  document.getElementById("empty").hidden = shown > 0;
  document.getElementById("count").textContent = `${shown} of ${apps.length} apps`;
  watchShown();
}

// The handles of the app rows on screen (the rows are in order, top to bottom: a binary
// search finds the first, so this stays cheap with 1,000 rows).
function rowsOnScreen() {
  if (document.getElementById("list-view").hidden) return [];
  const rows = [...countCells.values()].map((cell) => cell.parentElement);
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid].getBoundingClientRect().bottom < 0) lo = mid + 1; else hi = mid;
  }
  const found = [];
  for (let i = lo; i < rows.length && found.length < WATCH_MAX; i += 1) {
    if (rows[i].getBoundingClientRect().top > window.innerHeight) break;
    found.push(rows[i].dataset.handle);
  }
  return found;
}

// Names the rows on screen to the server when they changed (or every WATCH_AGAIN_MS).
async function watchShown() {
  const handles = rowsOnScreen();
  const key = handles.join("\n");
  if (handles.length === 0 || (key === watchedKey && Date.now() - watchedAt < WATCH_AGAIN_MS)) {
    return;
  }
  watchedKey = key;
  watchedAt = Date.now();
  const response = await fetch("/api/replicas", {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-TorchX-Token": token()},
    body: JSON.stringify({handles}),
  });
  if (response.ok) showCounts((await response.json()).replicas);
}

function showCounts(known) {
  for (const [handle, text] of Object.entries(known)) {
    counts.set(handle, text);
    const cell = countCells.get(handle);
    if (cell !== undefined) cell.textContent = text;
  }
}

function receive(doc) {
  if (latest !== null && doc.data.generation < latest.data.generation) return;
  latest = doc;
  fillSelect(document.getElementById("filter-scheduler"),
    doc.data.schedulers.map((feed) => feed.scheduler));
  render();
  if (shownApp !== null) {
    // the app page asks again (one describe) only when the list says the app changed
    const row = findApp(shownApp.handle);
    const key = row === null ? null : `${row.state} ${row.end_time}`;
    if (key !== shownApp.listed) {
      shownApp.listed = key;
      loadApp(shownApp.handle);
    }
  }
}

function findApp(handle) {
  if (latest === null) return null;
  for (const feed of latest.data.schedulers) {
    for (const app of feed.apps) if (app.handle === handle) return app;
  }
  return null;
}

function appHash(handle) { return `#app=${encodeURIComponent(handle)}`; }

function token() {
  return document.querySelector('meta[name="torchx-ui-token"]').getAttribute("content");
}

async function loadApp(handle) {
  const response = await fetch(`/api/app?handle=${encodeURIComponent(handle)}`);
  if (shownApp === null || shownApp.handle !== handle) return;
  const message = document.getElementById("app-message");
  if (!response.ok) {
    message.textContent = (await response.text()).trim();
    return;
  }
  const doc = await response.json();
  const status = doc.data.status;
  document.getElementById("app-title").textContent = `${doc.data.app.spec.name}: ${handle}`;
  document.getElementById("app-summary").textContent =
    `${status.state}, started ${formatTime(status.start_time)}, ` +
    `duration ${formatDuration(doc.data.duration_s)}, restarts ${status.num_restarts}`;
  message.textContent = status.msg ?? "";
  document.getElementById("cancel").hidden = ENDED.includes(status.state);
  document.getElementById("delete").hidden = !ENDED.includes(status.state);
  const rows = [];
  for (const role of status.roles) {
    for (const replica of role.replicas) {
      const tr = el("tr");
      const error = replica.structured_error_msg === null ? ""
        : JSON.stringify(replica.structured_error_msg);
      tr.append(el("td", `${role.role}/${replica.id}`),
        el("td", replica.state, `state state-${replica.state}`),
        el("td", replica.exit_code ?? "-"), el("td", replica.hostname ?? "-"), el("td", error));
      const td = el("td");
      const button = el("button", "follow");
      button.type = "button";
      button.addEventListener("click", () => followLog(handle, role.role, replica.id));
      td.append(button);
      tr.append(td);
      rows.push(tr);
    }
  }
  document.getElementById("replica-rows").replaceChildren(...rows);
  document.getElementById("appdef").textContent = JSON.stringify(doc.data.app, null, 2);
  showRunOptions(doc.data.run_options ?? {});
}

// The run options the app was submitted with, one row each, as text (masked by the
// scheduler when it kept them): lists and mappings as -cfg writes them.
function showRunOptions(options) {
  const rows = [];
  for (const [name, value] of Object.entries(options)) {
    let text = String(value);
    if (Array.isArray(value)) text = value.join(",");
    else if (value !== null && typeof value === "object") {
      text = Object.entries(value).map(([k, v]) => `${k}:${v}`).join(",");
    }
    const tr = el("tr");
    tr.append(el("td", name, "option"), el("td", text, "value"));
    rows.push(tr);
  }
  document.getElementById("run-option-rows").replaceChildren(...rows);
  document.getElementById("run-options").hidden = rows.length === 0;
  document.getElementById("run-options-none").hidden = rows.length !== 0;
}

// Follows one replica's log (role, replica), or every replica's merged (role null): each
// line prefixed role/N. The page holds the newest LOG_KEEP lines live (whole batches are
// dropped, oldest first); "load earlier" shows, above them, the page of lines before the
// oldest held (asked of the server by each line's index in its replica's log), further
// back at each click.
function followLog(handle, role, replica) {
  if (shownApp.log) shownApp.log.close();
  shownApp.following = {role, replica};
  const regex = document.getElementById("log-regex").value;
  const pre = document.getElementById("log");
  const earlier = document.getElementById("log-earlier");
  const more = document.getElementById("log-more");
  const status = document.getElementById("log-status");
  pre.replaceChildren();
  earlier.replaceChildren();
  earlier.hidden = true;
  more.hidden = true;
  document.getElementById("log-section").hidden = false;
  document.getElementById("log-title").textContent =
    role === null ? "log of every replica, merged" : `log of ${role}/${replica}`;
  status.textContent = "following…";
  const query = new URLSearchParams({handle});
  if (role !== null) {
    query.set("role", role);
    query.set("replica", String(replica));
  }
  if (regex) query.set("regex", regex);
  const events = new EventSource(`/api/log?${query}`);
  shownApp.log = events;
  let held = 0;
  // per batch of the log, oldest first: {replica, first, count, text, node}; node is
  // null until the batch is in the page (batches arrive faster than frames are drawn)
  const nodes = [];
  const oldest = new Map(); // replica -> index of its oldest line the page has shown
  let drawing = false;
  // once per frame, not once per batch: the new batches go into the page together and
  // it scrolls once, so the engine lays the log out once a frame however fast it comes
  const draw = () => {
    drawing = false;
    if (shownApp === null || shownApp.log !== events) return; // another log is shown now
    const fragment = document.createDocumentFragment();
    for (const batch of nodes) {
      if (batch.node === null) {
        batch.node = document.createTextNode(batch.text);
        batch.text = null;
        fragment.append(batch.node);
      }
    }
    pre.append(fragment);
    pre.scrollTop = pre.scrollHeight;
  };
  events.addEventListener("lines", (e) => {
    const batch = JSON.parse(e.data);
    if (!oldest.has(batch.replica)) oldest.set(batch.replica, batch.first);
    const text = batch.lines.map((line) => `${batch.replica} ${line}\n`).join("");
    nodes.push({replica: batch.replica, first: batch.first, count: batch.lines.length,
      text, node: null});
    held += batch.lines.length;
    while (nodes.length > 1 && held > LOG_KEEP) { // whole batches: at most LOG_KEEP held
      const gone = nodes.shift();
      held -= gone.count;
      if (gone.node !== null) pre.removeChild(gone.node); // else never drawn: dropped
      // until an earlier page is shown, the oldest shown is the oldest held
      if (earlier.hidden) oldest.set(gone.replica, gone.first + gone.count);
      more.hidden = false;
    }
    if (!drawing) {
      drawing = true;
      requestAnimationFrame(draw);
    }
  });
  more.onclick = async () => {
    // the page before the oldest line shown, of each replica that has earlier lines
    const wanted = [...oldest].filter(([, first]) => first > 0);
    const per = Math.max(Math.floor(LOG_KEEP / Math.max(wanted.length, 1)), 100);
    const parts = [];
    for (const [label, first] of wanted) {
      const cut = label.lastIndexOf("/");
      const offset = Math.max(first - per, 0);
      const page = new URLSearchParams({handle, role: label.slice(0, cut),
        replica: label.slice(cut + 1), offset: String(offset), limit: String(first - offset)});
      if (regex) page.set("regex", regex);
      const response = await fetch(`/api/log/page?${page}`);
      if (!response.ok) {
        status.textContent = (await response.text()).trim();
        return;
      }
      const doc = await response.json();
      oldest.set(label, doc.first);
      parts.push(doc.lines.map((line) => `${label} ${line}\n`).join(""));
    }
    earlier.replaceChildren(document.createTextNode(parts.join("")));
    earlier.hidden = false;
    more.hidden = ![...oldest.values()].some((first) => first > 0);
  };
  events.addEventListener("error", () => {
    // a refused request (a regex the server cannot compile) closes the stream for good
    if (events.readyState === EventSource.CLOSED) {
      status.textContent = "the log could not be followed (is the regex valid?)";
    }
  });
  events.addEventListener("end", (e) => {
    if (drawing) draw(); // every line in the page before it says the log ended
    const end = JSON.parse(e.data);
    status.textContent = end.error === null ? "the log ended" : `the log broke off: ${end.error}`;
    events.close();
  });
}

// cancel or delete the app shown, after asking once; the answer (or the scheduler's
// refusal) is shown beside the buttons
async function act(action) {
  const handle = shownApp.handle;
  if (!window.confirm(`${action === "cancel" ? "Cancel" : "Delete"} ${handle}?`)) return;
  const result = document.getElementById("action-result");
  const response = await fetch(`/api/${action}`, {
    method: "POST",
    headers: {"Content-Type": "application/json", "X-TorchX-Token": token()},
    body: JSON.stringify({handle}),
  });
  if (!response.ok) {
    result.textContent = (await response.text()).trim();
  } else if (action === "delete") {
    window.location.hash = "";
  } else {
    result.textContent = "cancel requested";
  }
}

function route() {
  const match = window.location.hash.match(/^#app=(.+)$/);
  if (shownApp !== null && shownApp.log) shownApp.log.close();
  shownApp = null;
  document.getElementById("list-view").hidden = match !== null;
  document.getElementById("app-view").hidden = match === null;
  if (match === null) return;
  const handle = decodeURIComponent(match[1]);
  shownApp = {handle, listed: null, log: null, following: null};
  for (const id of ["app-title", "app-summary", "app-message", "action-result", "appdef"]) {
    document.getElementById(id).textContent = "";
  }
  document.getElementById("replica-rows").replaceChildren();
  document.getElementById("run-option-rows").replaceChildren();
  document.getElementById("log-section").hidden = true;
  loadApp(handle);
}

function connect() {
  const status = document.getElementById("connection");
  const events = new EventSource("/api/events");
  events.addEventListener("open", () => {
    status.textContent = "live";
    status.className = "connection live";
  });
  events.addEventListener("apps", (e) => receive(JSON.parse(e.data)));
  events.addEventListener("replicas", (e) => showCounts(JSON.parse(e.data)));
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
  document.getElementById("log-regex").addEventListener("change", () => {
    if (shownApp !== null && shownApp.following !== null) {
      followLog(shownApp.handle, shownApp.following.role, shownApp.following.replica);
    }
  });
  document.getElementById("follow-all").addEventListener("click", () => {
    if (shownApp !== null) followLog(shownApp.handle, null, null);
  });
  document.getElementById("cancel").addEventListener("click", () => act("cancel"));
  document.getElementById("delete").addEventListener("click", () => act("delete"));
  // the token stays out of the address bar (and the history) once its cookie is set
  if (window.location.search.includes("token=")) {
    window.history.replaceState(null, "", `/${window.location.hash}`);
  }
  window.addEventListener("hashchange", route);
  let scrolled = null;
  window.addEventListener("scroll", () => { // once the scrolling pauses
    window.clearTimeout(scrolled);
    scrolled = window.setTimeout(watchShown, 200);
  });
  route();
  connect();
  window.setInterval(render, 1000); // running apps' durations
});
