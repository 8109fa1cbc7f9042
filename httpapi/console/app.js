// samsa console: a small single-page app over the JSON API under /api/
// (httpapi/api.go). No build step, no dependencies. Pages are routed by
// the URL's hash: #/brokers, #/topics, #/topics/NAME, #/groups,
// #/groups/NAME, #/messages?topic=..., #/links, #/clients, #/schemas,
// #/schemas/SUBJECT
"use strict";

const view = document.getElementById("view");
let timer = null; // the current page's refresh, cleared on navigation

// esc makes a value safe to put in HTML.
function esc(v) {
  return String(v ?? "").replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
const enc = encodeURIComponent;

async function api(method, path, body) {
  const opts = { method, headers: {} };
  if (method !== "GET") {
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body ?? {});
  }
  const resp = await fetch("/api" + path, opts);
  const data = await resp.json().catch(() => ({ error: resp.statusText }));
  if (!resp.ok) throw new Error(data.error || data.message || resp.statusText); // message: the registry's
  return data;
}

function toast(msg, isError) {
  const t = document.getElementById("toast");
  t.textContent = msg;
  t.className = isError ? "error" : "";
  t.hidden = false;
  clearTimeout(toast.t);
  toast.t = setTimeout(() => { t.hidden = true; }, isError ? 8000 : 3000);
}

function table(headers, rows, id) {
  const th = headers.map(h => {
    const [name, cls] = h.split(":");
    return `<th class="${cls || ""}">${esc(name)}</th>`;
  }).join("");
  const body = rows.length ? rows.map(r => `<tr>${r.map(c => c).join("")}</tr>`).join("")
    : `<tr><td colspan="${headers.length}" class="muted">none</td></tr>`;
  return `<table${id ? ` id="${id}"` : ""}><thead><tr>${th}</tr></thead><tbody>${body}</tbody></table>`;
}
const td = (v, cls) => `<td class="${cls || ""}">${esc(v)}</td>`;
const tdHTML = (html, cls) => `<td class="${cls || ""}">${html}</td>`;
const num = v => td(v, "num");
const ids = a => (a || []).join(", ");
// size shows bytes as a person reads them; "—" when unknown (-1).
function size(n) {
  if (n < 0) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

// remoteSum adds up f over the tiered partitions whose leader answered;
// -1 when none did.
function remoteSum(t, f) {
  const known = t.partitions.filter(p => p.remote);
  return known.length ? known.reduce((n, p) => n + f(p.remote), 0) : -1;
}

// ---- pages ----

async function brokersPage() {
  const { cluster, health } = await api("GET", "/cluster");
  document.getElementById("cluster-id").textContent = "cluster " + cluster.cluster_id;
  const badge = health.healthy ? `<span class="badge ok" id="health">healthy</span>`
    : `<span class="badge bad" id="health">unhealthy</span> ${esc(health.problems.join("; "))}`;
  view.innerHTML = `
    <h1>Brokers</h1>
    <div class="card row">
      <div class="stat"><b>${cluster.brokers.length}</b><span>brokers</span></div>
      <div class="stat"><b id="controller">${esc(cluster.controller)}</b><span>controller</span></div>
      <div class="stat"><b>${cluster.topics}</b><span>topics</span></div>
      <div class="stat"><b>${cluster.partitions}</b><span>partitions</span></div>
      <div class="stat"><b>${badge}</b><span>health</span></div>
    </div>
    ${table(["Broker", "Host", "Port:num", "Rack", "Controller", "Leaders:num", "Replicas:num", "Reachable"], cluster.brokers.map(b => [
      td(b.id), td(b.host, "mono"), num(b.port), td(b.rack || "—"), td(b.controller ? "★ controller" : ""),
      num(b.leaders), num(b.replicas), tdHTML(b.reachable ? `<span class="badge ok">yes</span>` : `<span class="badge bad">no</span>`)]), "brokers")}
    ${health.under_replicated_partitions.length ? `<h2>Under-replicated partitions</h2><p class="mono">${esc(health.under_replicated_partitions.join(", "))}</p>` : ""}
    ${health.leaderless_partitions.length ? `<h2>Partitions without a leader</h2><p class="mono">${esc(health.leaderless_partitions.join(", "))}</p>` : ""}`;
}

async function topicsPage(params) {
  const internal = params.get("internal") === "true";
  const topics = await api("GET", "/topics" + (internal ? "?internal=true" : ""));
  view.innerHTML = `
    <h1>Topics</h1>
    <div class="card">
      <form class="inline" id="create-topic">
        <label>Name<input name="name" required placeholder="orders"></label>
        <label>Partitions<input name="partitions" type="number" min="1" placeholder="default"></label>
        <label>Replication factor<input name="rf" type="number" min="1" placeholder="default"></label>
        <label>Configs (key=value, one a line)<textarea name="configs" rows="1" cols="32" placeholder="retention.ms=86400000"></textarea></label>
        <button type="submit">Create topic</button>
      </form>
    </div>
    <p><label style="flex-direction:row;gap:6px"><input type="checkbox" id="internal" ${internal ? "checked" : ""}> show internal topics</label></p>
    ${table(["Topic", "Partitions:num", "Replication:num", "Under-replicated:num", "Records:num", "Size:num"], topics.map(t => [
      tdHTML(`<a href="#/topics/${enc(t.name)}">${esc(t.name)}</a>${t.internal ? ' <span class="badge warn">internal</span>' : ""}`),
      num(t.partitions), num(t.replication_factor),
      tdHTML(t.under_replicated ? `<span class="badge bad">${t.under_replicated}</span>` : "0", "num"), num(t.records), num(size(t.size))]), "topics")}`;
  document.getElementById("internal").onchange = e => { location.hash = "#/topics" + (e.target.checked ? "?internal=true" : ""); };
  document.getElementById("create-topic").onsubmit = async e => {
    e.preventDefault();
    const f = e.target;
    const configs = {};
    for (const line of f.configs.value.split("\n")) {
      const i = line.indexOf("=");
      if (i > 0) configs[line.slice(0, i).trim()] = line.slice(i + 1).trim();
    }
    try {
      await api("POST", "/topics", { name: f.name.value.trim(), partitions: +f.partitions.value || 0, replication_factor: +f.rf.value || 0, configs });
      toast(`topic ${f.name.value} created`);
      location.hash = "#/topics/" + enc(f.name.value.trim());
    } catch (err) { toast(err.message, true); }
  };
}

async function topicPage(name) {
  const t = await api("GET", "/topics/" + enc(name));
  const overrides = t.configs.filter(c => c.source === "topic");
  view.innerHTML = `
    <h1>Topic <span class="mono" id="topic-name">${esc(t.name)}</span> ${t.internal ? '<span class="badge warn">internal</span>' : ""}</h1>
    <div class="card row">
      <div class="stat"><b>${t.partitions.length}</b><span>partitions</span></div>
      <div class="stat"><b>${t.partitions.reduce((n, p) => n + Math.max(p.end_offset - p.start_offset, 0), 0)}</b><span>records</span></div>
      <div class="stat"><b id="topic-size">${size(t.partitions.some(p => p.size >= 0) ? t.partitions.reduce((n, p) => n + Math.max(p.size, 0), 0) : -1)}</b><span>${t.tiered ? "local size (leaders)" : "size (leaders)"}</span></div>
      ${t.tiered ? `
      <div class="stat"><b id="topic-remote">${size(remoteSum(t, r => r.remote_bytes))}</b><span>remote size</span></div>
      <div class="stat"><b id="topic-upload-lag">${size(remoteSum(t, r => r.copy_lag_bytes))}</b><span>upload lag</span></div>
      <div class="stat"><b id="topic-remote-fetch">${size(Math.round(t.tiered.remote_fetch_bytes_per_sec))}/s</b><span>remote fetch (1 min)</span></div>` : ""}
      <div class="stat"><b class="mono" style="font-size:12px">${esc(t.id)}</b><span>topic id</span></div>
      <div class="stat"><a href="#/messages?topic=${enc(t.name)}">Browse messages →</a></div>
      <div class="stat" style="margin-left:auto"><button class="danger" id="delete-topic">Delete topic</button></div>
    </div>
    <h2>Partitions</h2>
    ${table(["Partition:num", "Leader:num", "Epoch:num", "Replicas", "ISR", "Offline", "Start offset:num", "End offset:num", "Records:num",
      ...(t.tiered ? ["Local size:num", "Remote size:num", "Upload lag:num"] : ["Size:num"])], t.partitions.map(p => [
      num(p.partition), num(p.leader), num(p.leader_epoch), td(ids(p.replicas)),
      tdHTML(p.isr.length < p.replicas.length ? `<span class="badge bad">${esc(ids(p.isr))}</span>` : esc(ids(p.isr))),
      td(ids(p.offline_replicas)), num(p.start_offset), num(p.end_offset), num(Math.max(p.end_offset - p.start_offset, 0)), num(size(p.size)),
      ...(t.tiered ? [num(size(p.remote ? p.remote.remote_bytes : -1)), num(size(p.remote ? p.remote.copy_lag_bytes : -1))] : [])]), "partitions")}
    <h2>Configs</h2>
    <div class="card">
      <form class="inline" id="alter-config">
        <label>Config<input name="key" list="config-names" required placeholder="retention.ms"></label>
        <label>Value<input name="value" required></label>
        <button type="submit">Set</button>
      </form>
      <datalist id="config-names">${t.configs.map(c => `<option value="${esc(c.name)}">`).join("")}</datalist>
    </div>
    ${table(["Config", "Value", "Source", ""], t.configs.map(c => [
      td(c.name, "mono"), td(c.sensitive ? "(sensitive)" : c.value, "mono"), td(c.source),
      tdHTML(c.source === "topic" ? `<button class="secondary" data-reset="${esc(c.name)}">reset to default</button>` : "")]), "configs")}
    <p class="muted">${overrides.length} override(s).</p>`;
  document.getElementById("delete-topic").onclick = async () => {
    if (!confirm(`Delete topic ${t.name}? Its records are gone for good.`)) return;
    try {
      await api("DELETE", "/topics/" + enc(t.name));
      toast(`topic ${t.name} deleted`);
      location.hash = "#/topics";
    } catch (err) { toast(err.message, true); }
  };
  document.getElementById("alter-config").onsubmit = async e => {
    e.preventDefault();
    try {
      await api("POST", `/topics/${enc(t.name)}/configs`, { set: { [e.target.key.value.trim()]: e.target.value.value } });
      toast(`${e.target.key.value} set`);
      route();
    } catch (err) { toast(err.message, true); }
  };
  view.querySelectorAll("[data-reset]").forEach(b => b.onclick = async () => {
    try {
      await api("POST", `/topics/${enc(t.name)}/configs`, { delete: [b.dataset.reset] });
      toast(`${b.dataset.reset} reset to its default`);
      route();
    } catch (err) { toast(err.message, true); }
  });
}

async function groupsPage() {
  const groups = await api("GET", "/groups");
  view.innerHTML = `
    <h1>Consumer groups</h1>
    ${table(["Group", "State", "Type", "Coordinator:num"], groups.map(g => [
      tdHTML(`<a href="#/groups/${enc(g.name)}">${esc(g.name)}</a>`), tdHTML(stateBadge(g.state)), td(g.protocol_type), num(g.coordinator)]), "groups")}`;
}

function stateBadge(s) {
  const cls = s === "Stable" ? "ok" : s === "Empty" ? "warn" : s === "Dead" ? "bad" : "warn";
  return `<span class="badge ${cls}">${esc(s)}</span>`;
}

// Lag history per group, kept in the tab's session storage while the page polls.
function lagHistory(group, total) {
  const key = "lag:" + group;
  const h = JSON.parse(sessionStorage.getItem(key) || "[]");
  if (total !== undefined) {
    h.push([Date.now(), total]);
    while (h.length > 300) h.shift();
    sessionStorage.setItem(key, JSON.stringify(h));
  }
  return h;
}

function plot(points, id = "lag-plot") {
  const W = 640, H = 160, L = 48, B = 22, T = 8, R = 8;
  if (points.length === 0) return `<p class="muted">no samples yet</p>`;
  const t0 = points[0][0], t1 = Math.max(points[points.length - 1][0], t0 + 1);
  const vmax = Math.max(...points.map(p => p[1])) > 0 ? Math.max(...points.map(p => p[1])) : 1;
  const x = t => L + (t - t0) / (t1 - t0) * (W - L - R), y = v => T + (1 - v / vmax) * (H - T - B);
  const d = points.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
  const secs = Math.round((t1 - t0) / 1000);
  return `<svg class="plot" id="${id}" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">
    <line class="axis" x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}"/><line class="axis" x1="${L}" y1="${T}" x2="${L}" y2="${H - B}"/>
    <text x="${L - 6}" y="${T + 10}" text-anchor="end">${+vmax.toPrecision(3)}</text><text x="${L - 6}" y="${H - B}" text-anchor="end">0</text>
    <text x="${L}" y="${H - 6}">${secs > 0 ? `-${secs}s` : ""}</text><text x="${W - R}" y="${H - 6}" text-anchor="end">now</text>
    <path class="line" d="${d}"/>${points.length === 1 ? `<circle cx="${x(points[0][0])}" cy="${y(points[0][1])}" r="3" fill="#3b5bdb"/>` : ""}</svg>`;
}

async function groupPage(name, refresh) {
  const g = await api("GET", "/groups/" + enc(name));
  const hist = lagHistory(name, g.total_lag);
  if (refresh && document.getElementById("group-name")) {
    // Refresh in place, leaving the forms as they are.
    document.getElementById("lag-box").innerHTML = lagBox(g, hist);
    return;
  }
  const topics = [...new Set(g.offsets.map(o => o.topic))];
  view.innerHTML = `
    <h1>Group <span class="mono" id="group-name">${esc(g.name)}</span> ${stateBadge(g.state)}</h1>
    <div class="card row">
      <div class="stat"><b>${g.members.length}</b><span>members</span></div>
      <div class="stat"><b>${esc(g.protocol || "—")}</b><span>assignor</span></div>
      <div class="stat"><b>${g.coordinator}</b><span>coordinator</span></div>
      <div class="stat" style="margin-left:auto"><button class="danger" id="delete-group">Delete group</button></div>
    </div>
    <h2>Members</h2>
    ${table(["Member", "Client", "Host", "Assigned partitions"], g.members.map(m => [
      td(m.member_id, "mono"), td(m.client_id), td(m.host, "mono"),
      td(m.assigned.map(a => `${a.topic} [${a.partitions.join(", ")}]`).join("; "))]), "members")}
    <div id="lag-box">${lagBox(g, hist)}</div>
    <h2>Reset offsets</h2>
    <div class="card">
      <form class="inline" id="seek-group">
        <label>Topic<select name="topic"><option value="">every topic of the group</option>${topics.map(t => `<option>${esc(t)}</option>`).join("")}</select></label>
        <label>To<select name="kind"><option value="start">start</option><option value="end">end</option><option value="offset">offset</option><option value="timestamp">timestamp</option></select></label>
        <label>Offset / time<input name="arg" placeholder="offset, or 2026-12-01T10:00"></label>
        <button type="submit">Reset offsets</button>
      </form>
      <p class="muted">Kafka resets only a group without members: stop its consumers first.</p>
    </div>`;
  document.getElementById("seek-group").onsubmit = async e => {
    e.preventDefault();
    const f = e.target;
    let to = f.kind.value;
    if (to === "offset") to = String(parseInt(f.arg.value, 10));
    if (to === "timestamp") to = "@" + new Date(f.arg.value).getTime();
    try {
      const offs = await api("POST", `/groups/${enc(g.name)}/seek`, { topic: f.topic.value, to });
      toast(`${offs.length} partition(s) reset`);
      groupPage(g.name, true);
    } catch (err) { toast(err.message, true); }
  };
  document.getElementById("delete-group").onclick = async () => {
    if (!confirm(`Delete group ${g.name} and its committed offsets?`)) return;
    try {
      await api("DELETE", "/groups/" + enc(g.name));
      toast(`group ${g.name} deleted`);
      location.hash = "#/groups";
    } catch (err) { toast(err.message, true); }
  };
  timer = setInterval(() => groupPage(name, true).catch(err => toast(err.message, true)), 2000);
}

function lagBox(g, hist) {
  return `
    <h2>Lag <span class="muted">(total <b id="total-lag">${g.total_lag}</b>)</span></h2>
    ${plot(hist)}
    ${table(["Topic", "Partition:num", "Committed:num", "End offset:num", "Lag:num", "Member", "Client"], g.offsets.map(o => [
      td(o.topic), num(o.partition), num(o.committed < 0 ? "—" : o.committed), num(o.end < 0 ? "—" : o.end),
      tdHTML(o.lag < 0 ? "—" : o.lag > 0 ? `<b>${o.lag}</b>` : "0", "num"), td(o.member_id || "—", "mono"), td(o.client_id || "—")]), "offsets")}`;
}

// Bytes of a base64 string (null stays null).
function bytesOf(b64) {
  if (b64 === null || b64 === undefined) return null;
  const s = atob(b64), out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function show(bytes, format) {
  if (bytes === null) return `<span class="muted">null</span>`;
  if (format === "hex") {
    return `<pre>${Array.from(bytes, b => b.toString(16).padStart(2, "0")).join(" ")}</pre>`;
  }
  const text = new TextDecoder("utf-8", { fatal: false }).decode(bytes);
  if (format === "json" || format === "auto") {
    try { return `<pre>${esc(JSON.stringify(JSON.parse(text), null, 2))}</pre>`; } catch {
      return `<pre>${esc(text)}</pre>` + (format === "json" ? ` <span class="badge warn">not JSON</span>` : "");
    }
  }
  return `<pre>${esc(text)}</pre>`;
}

async function messagesPage(params) {
  const topics = await api("GET", "/topics?internal=true");
  const topic = params.get("topic") || (topics[0] && topics[0].name) || "";
  const partition = params.get("partition") || "0";
  const from = params.get("from") || "start";
  const limit = params.get("limit") || "50";
  const format = params.get("format") || "text";
  const t = topics.find(x => x.name === topic);
  const parts = t ? Array.from({ length: t.partitions }, (_, i) => i) : [];
  view.innerHTML = `
    <h1>Messages</h1>
    <div class="card">
      <form class="inline" id="browse">
        <label>Topic<select name="topic">${topics.map(x => `<option ${x.name === topic ? "selected" : ""}>${esc(x.name)}</option>`).join("")}</select></label>
        <label>Partition<select name="partition">${parts.map(p => `<option ${String(p) === partition ? "selected" : ""}>${p}</option>`).join("")}</select></label>
        <label>From (start, end, an offset, or @millis / a date)<input name="from" value="${esc(from)}"></label>
        <label>Limit<input name="limit" type="number" min="1" max="1000" value="${esc(limit)}"></label>
        <label>Show as<select name="format">${["text", "json", "hex"].map(f => `<option ${f === format ? "selected" : ""}>${f}</option>`).join("")}</select></label>
        <button type="submit">Read</button>
      </form>
    </div>
    <div id="messages-box"><p class="muted">Loading…</p></div>`;
  document.getElementById("browse").onsubmit = e => {
    e.preventDefault();
    const f = e.target;
    let fr = f.from.value.trim();
    if (fr && !/^(start|end|\d+|@\d+)$/.test(fr) && !isNaN(new Date(fr).getTime())) fr = "@" + new Date(fr).getTime();
    const q = new URLSearchParams({ topic: f.topic.value, partition: f.partition.value, from: fr || "start", limit: f.limit.value, format: f.format.value });
    location.hash = "#/messages?" + q;
  };
  document.querySelector("#browse [name=topic]").onchange = e => { location.hash = "#/messages?" + new URLSearchParams({ topic: e.target.value }); };
  if (!topic) { document.getElementById("messages-box").innerHTML = `<p class="muted">no topics</p>`; return; }
  const msgs = await api("GET", `/topics/${enc(topic)}/messages?` + new URLSearchParams({ partition, from, limit }));
  document.getElementById("messages-box").innerHTML = `
    <p class="muted">${msgs.length} message(s) of ${esc(topic)}-${esc(partition)} from ${esc(from)}</p>
    ${table(["Offset:num", "Timestamp", "Key", "Value", "Headers"], msgs.map(m => [
      num(m.offset), td(new Date(m.timestamp).toISOString(), "mono"),
      tdHTML(show(bytesOf(m.key), format === "json" ? "auto" : format), "mono"), tdHTML(show(bytesOf(m.value), format), "mono"),
      tdHTML(m.headers.map(h => `<div><b>${esc(h.key)}</b>: ${show(bytesOf(h.value), format === "hex" ? "hex" : "text")}</div>`).join(""), "mono")]), "messages")}`;
}

// ---- cluster links ----

function linkBadge(s) {
  const cls = s === "active" || s === "mirroring" ? "ok" : s === "promoted" ? "" : "warn";
  return `<span class="badge ${cls}">${esc(s)}</span>`;
}

// linkState is a link's state, and a red badge when it or one of its
// partitions has an error.
function linkState(l) {
  const bad = Object.keys(l.errors || {}).length || (l.partitions || []).some(p => p.error);
  return linkBadge(l.state) + (bad ? ` <span class="badge bad">error</span>` : "");
}

// linkCard is a link: its state and errors, its lag over time (the
// brokers keep an hour of it), its mirror topics and, per mirror
// partition, the source's end, the mirror's and the lag.
function linkCard(l, i) {
  const errs = Object.entries(l.errors || {}).map(([k, v]) => `<li class="error">${k ? `<b>${esc(k)}</b>: ` : ""}${esc(v)}</li>`).join("");
  const last = l.history.length ? l.history[l.history.length - 1] : null;
  return `<div class="card link" data-link="${esc(l.name)}">
    <h2>${esc(l.name)} ${linkState(l)}</h2>
    <p>from <span class="mono">${esc(l.configs["source.bootstrap.servers"])}</span>, topics <span class="mono">${esc(l.configs.topics || "—")}</span>${l.configs.groups ? `, groups <span class="mono">${esc(l.configs.groups)}</span>` : ""}</p>
    ${errs ? `<ul class="errors">${errs}</ul>` : ""}
    <div class="row">
      <div class="link-plot"><h3>Lag (records)${last ? ` <span class="muted">now ${last.records}</span>` : ""}</h3>${plot(l.history.map(h => [h.t, h.records]), `link-${i}-records`)}</div>
      <div class="link-plot"><h3>Lag (seconds)${last ? ` <span class="muted">now ${last.seconds}</span>` : ""}</h3>${plot(l.history.map(h => [h.t, h.seconds]), `link-${i}-seconds`)}</div>
    </div>
    ${table(["Mirror topic", "State"], (l.mirrors || []).map(m => [
      tdHTML(`<a href="#/topics/${enc(m.topic)}">${esc(m.topic)}</a>`), tdHTML(linkBadge(m.state))]), `link-${i}-mirrors`)}
    ${table(["Topic", "Partition:num", "Leader:num", "Source end:num", "Mirror end:num", "Lag:num", "Lag (s):num", "Error"], (l.partitions || []).map(p => [
      td(p.topic), num(p.partition), num(p.leader), num(p.source_end_offset < 0 ? "—" : p.source_end_offset),
      num(p.mirror_end_offset < 0 ? "—" : p.mirror_end_offset), tdHTML(p.lag > 0 ? `<b>${p.lag}</b>` : "0", "num"), num(p.lag_seconds),
      td(p.error || "")]), `link-${i}-partitions`)}
  </div>`;
}

async function linksPage(refresh) {
  const links = await api("GET", "/links");
  if (refresh && !document.getElementById("links")) return; // another page since
  view.innerHTML = `
    <h1>Cluster links</h1>
    <p class="muted">Topics of other clusters mirrored here at their offsets: <span class="mono">samsa link create</span>, <span class="mono">promote</span>, <span class="mono">failover</span>.</p>
    ${table(["Link", "State", "Source", "Mirrors:num", "Lag:num"], links.map(l => [
      td(l.name), tdHTML(linkState(l)), td(l.configs["source.bootstrap.servers"], "mono"), num((l.mirrors || []).length),
      num((l.partitions || []).reduce((n, p) => n + Math.max(0, p.lag), 0))]), "links")}
    ${links.map(linkCard).join("")}`;
  if (!refresh) timer = setInterval(() => linksPage(true).catch(err => toast(err.message, true)), 5000);
}

// ---- clients (KIP-714) ----

// clientPlots are the plots of a client's card: a title, and the names
// (in order of preference) of the series plotted.
const clientPlots = [
  ["Request latency (ms)", /\.request\.latency\.avg$/, /\.request\.latency/],
  ["Record send rate (/s)", /\.record\.send\.rate$/, /\.record\.send\.rate/],
  ["Consumer lag (records, as the client sees it)", /\.records\.lag\.max$/, /\.records\.lag$/, /\.records\.lag/],
];

function clientCard(c, i) {
  const plots = clientPlots.map(([title, ...names], j) => {
    let s;
    for (const re of names) {
      s = c.series.find(x => re.test(x.name) && x.history && x.history.length);
      if (s) break;
    }
    if (!s) return "";
    const labels = Object.entries(s.labels || {}).map(([k, v]) => `${k}=${v}`).join(", ");
    return `<div class="client-plot"><h3>${esc(title)}</h3><p class="muted mono">${esc(s.name)}${labels ? ` {${esc(labels)}}` : ""} = ${+s.value.toPrecision(4)}</p>
      ${plot(s.history.map(h => [h.t, h.v]), `client-${i}-plot-${j}`)}</div>`;
  }).join("");
  const rows = c.series.map(s => [td(s.name, "mono"), td(Object.entries(s.labels || {}).map(([k, v]) => `${k}=${v}`).join(", "), "mono"),
    td(s.counter ? "counter" : "gauge"), num(+s.value.toPrecision(6))]);
  return `<div class="card client" data-instance="${esc(c.instance_id)}">
    <h2>${esc(c.client_id || "(no client id)")} <span class="muted mono">${esc(c.instance_id)}</span></h2>
    <p>${esc(c.software_name)} ${esc(c.software_version)} from <span class="mono">${esc(c.address)}</span>,
      ${c.connected ? `<span class="badge ok">connected</span>` : `<span class="badge warn">disconnected</span>`},
      ${c.pushes} push(es), the last ${esc(new Date(c.last_push).toLocaleTimeString())}</p>
    <div class="row">${plots || `<p class="muted">nothing to plot yet</p>`}</div>
    <details><summary>${c.series.length} series</summary>${table(["Metric", "Labels", "Kind", "Value:num"], rows)}</details>
  </div>`;
}

async function clientsPage(refresh) {
  const clients = await api("GET", "/clients");
  if (refresh && !document.getElementById("clients")) return; // another page since
  const open = new Set([...document.querySelectorAll(".client details[open]")].map(d => d.closest(".client").dataset.instance));
  view.innerHTML = `
    <h1>Clients</h1>
    <p class="muted">Client instances that pushed their metrics to this broker (KIP-714). Clients push only what a
      subscription asks of them: <span class="mono">kafka-client-metrics.sh --alter --name all --metrics org.apache.kafka. --interval 5000</span>.</p>
    ${table(["Client id", "Instance", "Software", "Address", "Connected", "Pushes:num", "Series:num", "Last push"], clients.map(c => [
      td(c.client_id), td(c.instance_id, "mono"), td(`${c.software_name} ${c.software_version}`), td(c.address, "mono"),
      tdHTML(c.connected ? `<span class="badge ok">yes</span>` : `<span class="badge warn">no</span>`), num(c.pushes), num(c.series.length),
      td(new Date(c.last_push).toLocaleTimeString())]), "clients")}
    ${clients.map(clientCard).join("")}`;
  document.querySelectorAll(".client").forEach(el => { if (open.has(el.dataset.instance)) el.querySelector("details").open = true; });
  if (!refresh) timer = setInterval(() => clientsPage(true).catch(err => toast(err.message, true)), 5000);
}

// schemasPage lists the schema registry's subjects.
async function schemasPage() {
  const subjects = await api("GET", "/registry/subjects");
  const global = await api("GET", "/registry/config");
  view.innerHTML = `
    <h1>Schemas</h1>
    <p class="muted">Subjects of the schema registry; global compatibility <span class="mono">${esc(global.compatibilityLevel)}</span>.</p>
    ${table(["Subject"], subjects.map(s => [tdHTML(`<a href="#/schemas/${enc(s)}">${esc(s)}</a>`)]), "subjects")}`;
}

// schemaPage shows a subject's versions, newest first, each schema in
// full, and a diff between two of them (?from=N&to=M; by default the
// latest and the one before it).
async function schemaPage(subject, params) {
  const base = `/registry/subjects/${enc(subject)}/versions`;
  const versions = await api("GET", base);
  const all = (await Promise.all(versions.map(v => api("GET", `${base}/${v}`)))).reverse();
  const level = await api("GET", `/registry/config/${enc(subject)}?defaultToGlobal=true`);
  view.innerHTML = `
    <h1>${esc(subject)}</h1>
    <p class="muted">Compatibility <span class="mono">${esc(level.compatibilityLevel)}</span>.</p>
    ${table(["Version:num", "Id:num", "Type", "References"], all.map(v => [
      num(v.version), num(v.id), td(v.schemaType || "AVRO"), td((v.references || []).map(r => `${r.name} → ${r.subject} v${r.version}`).join(", "))]), "versions")}
    ${diffSection(subject, all, params)}
    ${all.map(v => `<details${v === all[0] ? " open" : ""}><summary>version ${esc(v.version)}</summary><pre class="mono">${esc(pretty(v.schema))}</pre></details>`).join("")}`;
  document.querySelectorAll("#diff select").forEach(sel => sel.addEventListener("change", () => {
    const [from, to] = [...document.querySelectorAll("#diff select")].map(s => s.value);
    location.hash = `#/schemas/${enc(subject)}?from=${enc(from)}&to=${enc(to)}`;
  }));
}

// diffSection is the diff between two of a subject's versions (all,
// newest first): those params name, else the two newest; nothing for a
// subject of one version.
function diffSection(subject, all, params) {
  if (all.length < 2) return "";
  const pick = (name, def) => all.find(v => String(v.version) === params.get(name)) || def;
  const from = pick("from", all[1]), to = pick("to", all[0]);
  const select = (name, cur) => `<select name="${name}">${all.map(v =>
    `<option value="${esc(v.version)}"${v === cur ? " selected" : ""}>version ${esc(v.version)}</option>`).join("")}</select>`;
  const lines = lineDiff(pretty(from.schema).split("\n"), pretty(to.schema).split("\n"));
  return `<section id="diff"><h2>Diff</h2>
    <p>${select("from", from)} → ${select("to", to)}</p>
    <pre class="mono diff">${lines.map(([op, l]) =>
      `<span class="${op === "+" ? "add" : op === "-" ? "del" : ""}">${esc(op + " " + l)}</span>`).join("\n")}</pre></section>`;
}

// lineDiff is the shortest edit from lines a to lines b, as [op, line]
// pairs: " " kept, "-" removed, "+" added (a longest common subsequence;
// past 2000 lines a side, the whole of a removed and b added).
function lineDiff(a, b) {
  if (a.length > 2000 || b.length > 2000) return [...a.map(l => ["-", l]), ...b.map(l => ["+", l])];
  const n = a.length, m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
    else if (j < m && (i === n || lcs[i][j + 1] >= lcs[i + 1][j])) { out.push(["+", b[j]]); j++; }
    else { out.push(["-", a[i]]); i++; }
  }
  return out;
}

// pretty indents a JSON schema; other text (Protobuf) is shown as it is.
function pretty(s) {
  try { return JSON.stringify(JSON.parse(s), null, 2); } catch { return s; }
}

// ---- routing ----

async function route() {
  clearInterval(timer);
  timer = null;
  document.getElementById("toast").hidden = true;
  const hash = location.hash.slice(1) || "/brokers";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  document.querySelectorAll("[data-nav]").forEach(a => a.classList.toggle("active", a.dataset.nav === parts[0]));
  try {
    switch (parts[0]) {
      case "topics": await (parts[1] !== undefined ? topicPage(parts[1]) : topicsPage(params)); break;
      case "groups": await (parts[1] !== undefined ? groupPage(parts[1]) : groupsPage()); break;
      case "messages": await messagesPage(params); break;
      case "links": await linksPage(); break;
      case "clients": await clientsPage(); break;
      case "schemas": await (parts[1] !== undefined ? schemaPage(parts[1], params) : schemasPage()); break;
      default: await brokersPage();
    }
  } catch (err) {
    view.innerHTML = `<h1>Error</h1><p class="badge bad" id="error">${esc(err.message)}</p>`;
  }
  // What the page shows, once shown (the browser test waits for it).
  view.dataset.route = location.hash;
}

window.addEventListener("hashchange", route);
route();
if (!document.getElementById("cluster-id").textContent) {
  api("GET", "/cluster").then(d => { document.getElementById("cluster-id").textContent = "cluster " + d.cluster.cluster_id; }).catch(() => {});
}
