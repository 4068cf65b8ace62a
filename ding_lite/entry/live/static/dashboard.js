// ding_lite dashboard: polls each run's status.json and new tensorboard scalars from the
// server that served this page (no framework, nothing from the network), and redraws.
"use strict";

const STATUS_EVERY_MS = 1000;
const SCALARS_EVERY_MS = 2000;
const FINAL = new Set(["finished", "failed", "interrupted"]);
const W = 300, H = 150, PAD_L = 42, PAD_R = 6, PAD_T = 6, PAD_B = 18;
const SVG_NS = "http://www.w3.org/2000/svg";
const LEDGER_ORDER = ["written", "waiting", "in_learner", "trained", "dropped_stale",
  "dropped_invalid", "dropped_rollback", "dropped_run_end"];

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const child of children) node.append(child);
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  return node;
}

function fmt(value, digits) {
  if (value === null || value === undefined) return "-";
  if (typeof value !== "number") return String(value);
  if (digits !== undefined) return value.toFixed(digits);
  if (Number.isInteger(value)) return value.toLocaleString("en-US");
  return Math.abs(value) >= 1000 ? value.toFixed(0) : value.toPrecision(4);
}

// `shown`: statuses whose JSON body the page shows too (422: a damaged status.json, the
// body says which field).
async function getJSON(url, shown = []) {
  const answer = await fetch(url, { cache: "no-store" });
  if (!answer.ok && !shown.includes(answer.status)) throw new Error(`${url}: HTTP ${answer.status}`);
  return answer.json();
}

class RunPane {
  constructor(run) {
    this.id = run.id;
    this.cursor = 0;
    this.series = new Map(); // tag -> [[step, value, wall], ...] sorted by step
    this.dirty = new Set();
    this.charts = new Map(); // tag -> {figure, line, last, labels}
    this.groups = new Map(); // "charts" -> div.charts
    this.final = false;
    const id = (name) => `${name}-${run.id}`;
    this.node = el("section", { class: "run", id: id("run"), "data-dir": run.dir });
    this.state = el("span", { class: "state", id: id("state") }, "...");
    this.node.append(el("h2", {}, run.name, this.state));
    this.node.append(el("div", { class: "muted" }, run.dir));
    this.stop = el("p", { class: "stop", id: id("stop") });
    this.warn = el("p", { class: "warn", id: id("warn") });
    this.figures = el("dl", { class: "figures", id: id("figures") });
    this.workers = el("tbody", { id: id("workers") });
    this.ledger = el("tbody", { id: id("ledger") });
    this.curves = el("div", { class: "curves", id: id("curves") });
    this.league = el("tbody", { id: id("league") });
    this.leagueHead = el("p", { class: "muted", id: id("league-summary") });
    this.leagueBox = el("div", { class: "league", hidden: "" }, el("h3", {}, "League"),
      this.leagueHead, el("table", { class: "league" }));
    const head = (...names) => el("thead", {}, el("tr", {}, ...names.map((n) => el("th", {}, n))));
    this.node.append(
      this.stop, this.warn, this.figures,
      el("h3", {}, "Workers"),
      el("table", { class: "workers" },
        head("id", "role", "host", "state", "heartbeat", "version", "rollouts"), this.workers),
      el("h3", {}, "Ledger"),
      el("table", { class: "ledger" }, head("rollout files", "count"), this.ledger),
      this.leagueBox,
      el("h3", {}, "Curves"), this.curves);
    this.leagueBox.querySelector("table").replaceChildren(
      head("member", "kind", "rating", "games", "main scores"), this.league);
  }

  showStatus(doc) {
    const state = doc.state || "?";
    this.state.textContent = state;
    this.state.className = `state ${state}`;
    this.final = FINAL.has(state);
    const reason = doc.stop_reason ? `stop reason: ${doc.stop_reason}` : "";
    this.stop.textContent = reason + (doc.stop_detail ? ` (${doc.stop_detail})` : "");
    this.warn.textContent = doc.error || doc.liveness || "";
    const ev = doc.eval || {}, best = doc.best_eval || {}, lag = doc.lag || {};
    const cap = doc.max_env_step ? ` / ${fmt(doc.max_env_step)}` : "";
    let evalText = fmt(ev.return_mean, 1);
    if (ev.policy_version !== null && ev.policy_version !== undefined) evalText += ` (v${ev.policy_version})`;
    if (ev.win_rate !== null && ev.win_rate !== undefined) evalText += `, win ${(100 * ev.win_rate).toFixed(0)}%`;
    const rows = [
      ["env steps", "envstep", `${fmt(doc.envstep)}${cap}`],
      ["iteration", "iteration", fmt(doc.iteration)],
      ["SPS", "sps", doc.sps === undefined ? "-" : fmt(Math.round(doc.sps))],
      ["policy version", "policy", doc.policy_version === undefined ? "-" : `v${doc.policy_version}`],
      ["eval return", "eval", evalText],
      ["best eval", "best", fmt(best.return_mean, 1)],
      ["train return", "train", fmt(doc.train_return, 1)],
      ["policy lag", "lag", `mean ${fmt(lag.mean, 2)}, max ${fmt(lag.max)}, recent ${(lag.recent || []).slice(-8).join(" ") || "-"}`],
      ["restarts", "restarts", fmt(doc.restarts)],
      ["failed tasks", "failed", fmt(doc.failed_tasks)],
      ["dropped env steps", "dropped", fmt(doc.dropped_env_steps)],
      ["waiting on", "waiting", doc.waiting_on || "-"],
      ["elapsed", "elapsed", doc.elapsed_s === undefined ? "-" : `${fmt(doc.elapsed_s, 1)} s`],
    ];
    if (!this.cells) { // built once, then updated in place (a selection survives a poll)
      this.cells = new Map(rows.map(([, key]) => [key, el("dd", { id: `${key}-${this.id}` })]));
      this.figures.replaceChildren(...rows.flatMap(([label, key]) => [el("dt", {}, label), this.cells.get(key)]));
    }
    for (const [, key, text] of rows) this.cells.get(key).textContent = text;
    this.workers.replaceChildren(...(doc.workers || []).map((w) => el("tr",
      { "data-role": w.role, "data-id": w.id },
      el("td", {}, w.id), el("td", {}, w.role + (w.evaluates ? " (eval)" : "")),
      el("td", {}, w.host || "-"), el("td", {}, w.state || "-"),
      el("td", {}, w.heartbeat_age_s === null || w.heartbeat_age_s === undefined ? "-" : `${w.heartbeat_age_s.toFixed(1)} s`),
      el("td", { class: "version" }, w.version === null || w.version === undefined ? "-" : `v${w.version}`),
      el("td", {}, fmt(w.rollouts)))));
    this.showLeague(doc.league);
    const ledger = doc.ledger;
    if (!ledger) {
      this.ledger.replaceChildren(el("tr", {}, el("td", {}, "none (serial: data stays in memory)"), el("td", {}, "")));
    } else {
      const keys = LEDGER_ORDER.filter((k) => k in ledger).concat(
        Object.keys(ledger).filter((k) => !LEDGER_ORDER.includes(k)).sort());
      this.ledger.replaceChildren(...keys.map((k) =>
        el("tr", { "data-key": k }, el("td", {}, k), el("td", {}, fmt(ledger[k])))));
    }
  }

  showLeague(league) {
    this.leagueBox.hidden = !league;
    if (!league) return;
    let summary = `pool ${fmt(league.pool)}, players ${fmt(league.players)}, matches ${fmt(league.matches)}`;
    if (league.exploitability !== null && league.exploitability !== undefined) {
      summary += `, exploitability ${league.exploitability.toFixed(4)}`;
    }
    this.leagueHead.textContent = summary;
    this.league.replaceChildren(...(league.top || []).map((m) => el("tr",
      { "data-member": m.name, "data-kind": m.kind },
      el("td", {}, m.name), el("td", {}, m.kind), el("td", {}, fmt(m.rating, 0)),
      el("td", {}, fmt(m.games)), el("td", {}, fmt(m.main_score, 2)))));
  }

  addScalars(answer) {
    this.cursor = answer.cursor;
    for (const [tag, points] of Object.entries(answer.series)) {
      let line = this.series.get(tag);
      if (!line) this.series.set(tag, (line = []));
      for (const p of points) line.push(p);
      line.sort((a, b) => a[0] - b[0]);
      this.dirty.add(tag);
    }
    for (const tag of [...this.dirty].sort()) this.draw(tag);
    this.dirty.clear();
  }

  group(tag) {
    const name = tag.includes("/") ? tag.split("/")[0] : "other";
    let box = this.groups.get(name);
    if (!box) {
      box = el("div", { class: "charts" });
      const details = el("details", { "data-group": name }, el("summary", {}, name), box);
      if (name === "charts") details.open = true;
      this.groups.set(name, box);
      const order = [...this.groups.keys()].sort((a, b) => (a === "charts" ? -1 : b === "charts" ? 1 : a.localeCompare(b)));
      this.curves.replaceChildren(...order.map((g) => this.groups.get(g).parentNode));
    }
    return box;
  }

  draw(tag) {
    let chart = this.charts.get(tag);
    if (!chart) {
      const last = el("span", {});
      const plot = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": tag });
      const axes = svg("path", { class: "axis", d: `M${PAD_L},${PAD_T} V${H - PAD_B} H${W - PAD_R}` });
      const line = svg("polyline", { class: "line", points: "" });
      // The newest point as a dot: a line needs two points, a run's first evaluation is one.
      const dot = svg("circle", { class: "dot", r: "3", cx: "0", cy: "0" });
      const labels = [0, 1, 2, 3].map(() => svg("text", {}));
      plot.append(axes, line, dot, ...labels);
      const figure = el("figure", { class: "chart", "data-tag": tag },
        el("figcaption", {}, el("span", {}, tag), last), plot);
      this.group(tag).append(figure);
      chart = { line, dot, last, labels };
      this.charts.set(tag, chart);
    }
    const points = this.series.get(tag);
    const xs = points.map((p) => p[0]), ys = points.map((p) => p[1]);
    let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
    let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
    if (x1 === x0) x1 = x0 + 1;
    if (y1 === y0) { y0 -= 0.5; y1 += 0.5; }
    const sx = (x) => PAD_L + ((x - x0) / (x1 - x0)) * (W - PAD_L - PAD_R);
    const sy = (y) => H - PAD_B - ((y - y0) / (y1 - y0)) * (H - PAD_T - PAD_B);
    chart.line.setAttribute("points", points.map((p) => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(" "));
    chart.line.setAttribute("data-count", String(points.length));
    const newest = points[points.length - 1];
    chart.dot.setAttribute("cx", sx(newest[0]).toFixed(1));
    chart.dot.setAttribute("cy", sy(newest[1]).toFixed(1));
    chart.last.textContent = fmt(ys[ys.length - 1]);
    const place = [[fmt(y1), 2, PAD_T + 8, "start"], [fmt(y0), 2, H - PAD_B, "start"],
      [fmt(x0), PAD_L, H - 4, "start"], [`${fmt(x1)} steps`, W - PAD_R, H - 4, "end"]];
    place.forEach(([text, x, y, anchor], i) => {
      const label = chart.labels[i];
      label.textContent = text;
      label.setAttribute("x", x); label.setAttribute("y", y); label.setAttribute("text-anchor", anchor);
    });
  }
}

function every(ms, job) {
  let running = false;
  const tick = async () => {
    if (running) return;
    running = true;
    try { await job(); document.getElementById("error").textContent = ""; }
    catch (err) { document.getElementById("error").textContent = `dashboard server: ${err.message}`; }
    finally { running = false; }
  };
  tick();
  return setInterval(tick, ms);
}

async function main() {
  const { runs } = await getJSON("/api/runs");
  const panes = runs.map((run) => new RunPane(run));
  document.getElementById("runs").replaceChildren(...panes.map((p) => p.node));
  every(STATUS_EVERY_MS, async () => {
    await Promise.all(panes.map(async (p) => p.showStatus(await getJSON(`/api/runs/${p.id}/status`, [422]))));
    document.getElementById("clock").textContent = `updated ${new Date().toLocaleTimeString()}`;
  });
  every(SCALARS_EVERY_MS, async () => {
    await Promise.all(panes.map(async (p) => {
      // A finished run's files stop growing: read until nothing new comes, then stop.
      if (p.final && p.drained) return;
      const answer = await getJSON(`/api/runs/${p.id}/scalars?cursor=${p.cursor}`);
      const fresh = answer.cursor > p.cursor;
      p.addScalars(answer);
      p.drained = p.final && !fresh;
    }));
  });
}

main().catch((err) => { document.getElementById("error").textContent = `cannot start: ${err.message}`; });
