// gpuplan page: a form over the JSON API, charts drawn as plain SVG, state in the URL.
// No build step, no dependencies. Every number shown comes from the API's report; the
// charts draw the report's own chart series (gpuplan/report/plots.py).
"use strict";

const SOURCES = ["catalog", "config", "params"];
const FORM_FIELDS = ["model", "config", "params", "tokens", "gpus", "days", "mfu", "gpu", "tp", "pp", "zero",
  "shard_group", "micro_batch", "seq_len", "recompute", "recompute_modules", "recompute_layers", "recipe", "dtype", "plan_gpus", "rank_by", "context", "batch",
  "quantization", "infer_tp", "rps", "ttft_p99", "tpot", "prompt", "output_tokens", "engine", "speculative",
  "prefix_hit", "max_loras", "max_lora_rank"];
// Megatron-style recompute scope (selective modules, or full recompute of the first N layers per
// stage): every training estimator takes them, so the panels agree on what is recomputed.
const RECOMPUTE_PARTS = {recompute_modules: "recompute_modules", recompute_layers: "recompute_layers"};
// Which form field goes to which API field, per estimator (the API takes the CLI's names).
const ENDPOINTS = {
  budget: {tokens: "tokens", gpu: "gpu", gpus: "gpus", days: "days", mfu: "mfu", dtype: "dtype", seq_len: "seq_len",
    recompute: "recompute", recipe: "recipe", zero: "zero", tp: "tp", pp: "pp", micro_batch: "micro_batch",
    shard_group: "shard_group", ...RECOMPUTE_PARTS},
  memory: {gpu: "gpu", gpus: "gpus", seq_len: "seq_len", micro_batch: "micro_batch", tp: "tp", pp: "pp", zero: "zero",
    shard_group: "shard_group", recipe: "recipe", recompute: "recompute", ...RECOMPUTE_PARTS},
  plan: {tokens: "tokens", gpu: "gpu", plan_gpus: "gpus", days: "days", seq_len: "seq_len", recipe: "recipe",
    dtype: "dtype", rank_by: "rank_by", shard_group: "shard_group", ...RECOMPUTE_PARTS},
  inference: {gpu: "gpu", context: "context", batch: "batch", quantization: "quantization", infer_tp: "tp",
    rps: "rps", ttft_p99: "ttft_p99", tpot: "tpot", prompt: "prompt", output_tokens: "output_tokens",
    engine: "engine", speculative: "speculative", prefix_hit: "prefix_hit", max_loras: "max_loras",
    max_lora_rank: "max_lora_rank"},
};
// The result lines shown as cards above each panel's charts (keys of the report).
const SUMMARY = {
  budget: ["gpus_rented", "wall_days", "gpu_hours", "mem_layout", "mem_fits", "fail_goodput", "cost_on_demand_usd",
    "cost_spot_usd", "budget_usd_on_demand"],
  memory: ["layout", "peak_total", "capacity", "headroom", "fits", "largest_micro_batch"],
  plan: ["best_layout", "best_gpus", "best_days", "best_mfu", "best_cost", "searched"],
  inference: ["sized_config", "sized_config_other_gpu", "sized_ttft_p99", "sized_tpot", "sized_cost_per_hour", "sized_cost_per_million_tokens",
    "weights_per_gpu", "max_sequences", "ttft", "tpot", "tokens_per_s", "cost_per_million_tokens",
    "instead_gpus", "instead_batch", "instead_context"],
};
// The memory panel checks the budget's own layout (one plan through every panel): these fields of
// the budget's "mem_layout" line become the memory request's.
const PLAN_LAYOUT_FIELDS = ["gpus", "tp", "pp", "vpp", "cp", "ep", "etp", "zero", "shard_group", "micro_batch", "recompute",
  "global_batch"];

const state = {lang: "en", messages: {}, english: {}, results: {}, noun: "GPU"};
const $ = (selector, root = document) => root.querySelector(selector);
const $$ = (selector, root = document) => Array.from(root.querySelectorAll(selector));

// ------------------------------------------------------------------ i18n
function t(key, values = {}) {
  const look = (tree) => key.split(".").reduce((node, part) => (node && typeof node === "object" ? node[part] : undefined), tree);
  let text = look(state.messages);
  if (typeof text !== "string") text = look(state.english);
  if (typeof text !== "string") return key;
  return text.replace(/\{(\w+)\}/g, (m, name) => (name in values ? String(values[name]) : m));
}

// A TPU answer's device noun (data.device_noun 'chip', schema.tpu_rules.device_noun) put into the page's own words
// and the report's titles, columns, formulas and notes at render time (report/device_words.py does the same for the
// CLI and the HTML report); a GPU answer's words as they are.
function devWords(text) {
  if (state.noun !== "chip" || typeof text !== "string") return text;
  if (state.lang !== "zh") return text.replace(/\bGPU(?=s?\b)/g, "chip");
  return text.replace(/([A-Za-z] )GPU(?=s?\b)/g, "$1chip").replace(/GPU/g, "芯片")
    .replace(/([\u2e80-\u9fff\uff00-\uffef·]) 芯片/g, "$1芯片").replace(/芯片 ([\u2e80-\u9fff\uff00-\uffef·])/g, "芯片$1");
}

function tc(key) {
  return devWords(t(key));
}

async function loadLanguage(lang) {
  const get = async (code) => (await fetch(`/static/i18n/${code}.json`)).json();
  state.english = Object.keys(state.english).length ? state.english : await get("en");
  state.messages = lang === "en" ? state.english : await get(lang);
  state.lang = lang;
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  $("#lang").value = lang;
  $$("[data-i18n]").forEach((el) => { el.textContent = t(el.dataset.i18n); });
  $$("[data-i18n-placeholder]").forEach((el) => { el.placeholder = t(el.dataset.i18nPlaceholder); });
}

// ------------------------------------------------------------------ form and URL state
function source() { return $("input[name=source]:checked").value; }

function showSource() {
  $$(".field[data-source]").forEach((el) => { el.hidden = el.dataset.source !== source(); });
}

function readForm() {
  const values = {source: source()};
  for (const name of FORM_FIELDS) {
    const value = $(`#${name}`).value.trim();
    if (value !== "") values[name] = value;
  }
  return values;
}

function toBase64Url(text) {
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  bytes.forEach((b) => { binary += String.fromCharCode(b); });
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function fromBase64Url(text) {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return new TextDecoder().decode(Uint8Array.from(binary, (c) => c.charCodeAt(0)));
}

function encodeState(values) {
  const params = new URLSearchParams({lang: state.lang});
  for (const [name, value] of Object.entries(values)) {
    if (name === "config") {
      if (values.source === "config") params.set("config", toBase64Url(minified(value)));
    } else if (name !== "model" || values.source === "catalog") {
      if (name !== "params" || values.source === "params") params.set(name, value);
    }
  }
  return "#" + params.toString();
}

function minified(text) {
  try { return JSON.stringify(JSON.parse(text)); } catch (e) { return text; }  // keep what was typed
}

function pretty(text) {
  try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
}

function applyState(params) {
  // a link names its source; an older one names a model (the catalog) or a config; the page's own
  // default is the CLI's: a bare parameter count (7B, the article's example)
  const named = ["model", "config", "params"].find((name) => params.has(name));
  const src = SOURCES.includes(params.get("source")) ? params.get("source")
    : {model: "catalog", config: "config", params: "params"}[named] || "params";
  $(`input[name=source][value=${src}]`).checked = true;
  for (const name of FORM_FIELDS) {
    if (!params.has(name)) continue;
    let value = params.get(name);
    if (name === "config") {
      try { value = pretty(fromBase64Url(value)); } catch (e) { value = ""; }
    }
    const el = $(`#${name}`);
    if (el.tagName === "SELECT" && !Array.from(el.options).some((o) => o.value === value)) el.add(new Option(value, value));
    el.value = value;
  }
  showSource();
}

function modelPart(values) {
  const src = values.source;
  if (src === "config") {
    try {
      return {config: JSON.parse(values.config || "")};
    } catch (error) {
      throw fieldError("config", t("messages.invalid_json", {error: error.message}));
    }
  }
  return src === "params" ? {params: values.params} : {model: values.model};
}

function fieldError(field, message) { const e = new Error(message); e.field = field; return e; }

function requestBody(endpoint, values) {
  const body = modelPart(values);
  for (const [formName, apiName] of Object.entries(ENDPOINTS[endpoint])) {
    if (values[formName] !== undefined) body[apiName] = values[formName];
  }
  return body;
}

// ------------------------------------------------------------------ errors inline
function clearErrors() {
  $$(".field .error").forEach((el) => { el.textContent = ""; });
  $$("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
}

// The form fields an API error's field names (plan's "gpus" is the search range, ...).
function formFieldsFor(endpoint, apiField) {
  if (!apiField) return [];
  const name = String(apiField);
  if (name.startsWith("config")) return ["config"];
  if (name === "model" && source() === "config") return ["config"];
  const reverse = Object.entries(ENDPOINTS[endpoint] || {}).filter(([, api]) => api === name).map(([form]) => form);
  const parts = reverse.length ? reverse : name.split("/");
  return parts.filter((part) => FORM_FIELDS.includes(part));
}

function markField(name, message) {
  const input = $(`#${name}`);
  const slot = $(`#${name}-error`);
  if (input) input.setAttribute("aria-invalid", "true");
  if (slot && !slot.textContent) slot.textContent = message;
}

// ------------------------------------------------------------------ requests
async function runAll(pushState = true) {
  clearErrors();
  const values = readForm();
  let bodies;
  try {
    bodies = Object.fromEntries(Object.keys(ENDPOINTS).map((name) => [name, requestBody(name, values)]));
  } catch (error) {
    markField(error.field, error.message);
    document.body.dataset.ready = "true";
    return;
  }
  if (pushState) history.replaceState(null, "", encodeState(values));
  $("#calculate").disabled = true;
  const others = ["plan", "inference"].map((name) => runOne(name, bodies[name]));
  await runOne("budget", bodies.budget);
  await runOne("memory", withPlanLayout(bodies.memory));
  await Promise.all(others);
  $("#calculate").disabled = false;
  document.body.dataset.ready = "true";
}

// --shard-group auto is a search (plan, budget): the memory check takes the group the budget's layout chose, or none.
function withPlanLayout(body) {
  const budget = state.results.budget;
  const line = budget ? findLine(budget, "mem_layout") : null;
  const out = {...body};
  if (String(out.shard_group).trim().toLowerCase() === "auto") delete out.shard_group;
  if (!line || typeof line.value !== "object" || line.value === null) return out;
  PLAN_LAYOUT_FIELDS.forEach((field) => { if (line.value[field] !== undefined) out[field] = line.value[field]; });
  return out;
}

async function runOne(name, body) {
  const panel = $(`#panel-${name}`);
  panel.dataset.state = "running";
  $(".status", panel).textContent = t("ui.running");
  try {
    const response = await fetch(`/api/${name}?lang=${state.lang}`, {
      method: "POST", headers: {"content-type": "application/json"}, body: JSON.stringify(body)});
    const data = await response.json().catch(() => ({}));
    if (!response.ok) return showError(panel, name, response.status, data);
    state.results[name] = data;
    renderPanel(panel, name, data);
  } catch (error) {
    showError(panel, name, 0, {message: t("messages.network_error", {error: error.message})});
  }
}

function showError(panel, name, status, data) {
  delete state.results[name];
  panel.dataset.state = "error";
  $(".status", panel).textContent = "";
  ["summary", "charts", "report"].forEach((cls) => { $(`.${cls}`, panel).replaceChildren(); });
  let message = data.message || (typeof data.detail === "string" ? data.detail : "");
  if (status === 413) message = t("messages.too_large", {limit: "256 KB"});
  if (status === 503) message = t("messages.not_available", {detail: message});
  if (!message) message = t("messages.request_failed", {status});
  const box = $(".error-box", panel);
  box.textContent = message;
  box.hidden = false;
  formFieldsFor(name, data.field).filter((field) => !(PANEL_ONLY_REFUSALS[name] || []).includes(field))
    .forEach((field) => markField(field, message));
}

// Shared form fields a panel refuses for itself alone: the serving panel refuses a TPU (jobs/inference/tpu_serving.py)
// that the budget, memory and plan panels answer on, so its refusal stays in its own panel, the GPU select unmarked.
const PANEL_ONLY_REFUSALS = {inference: ["gpu"]};

// ------------------------------------------------------------------ report rendering
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  children.flat().forEach((c) => node.append(c instanceof Node ? c : document.createTextNode(String(c ?? ""))));
  return node;
}

function findLine(data, key) {
  for (const section of data.sections) {
    const line = section.lines.find((l) => l.key === key);
    if (line) return line;
  }
  return null;
}

function display(line) {
  if (line.text) return line.text;
  const v = line.value;
  const shown = typeof v === "number" ? Number(v.toPrecision(4)).toLocaleString("en") : String(v ?? "");
  return `${shown} ${line.unit || ""}`.trim();
}

// An input's label: the page's own word for it, else the report's (inputs.*), else the key in words
// (never a raw "ui.layout").
function inputLabel(key) {
  for (const path of [`ui.${key}`, `inputs.${key}`]) {
    const text = t(path);
    if (text !== path) return text;
  }
  return key.replace(/_/g, " ");
}

function renderPanel(panel, name, data) {
  panel.dataset.state = "done";
  panel.dataset.kind = data.kind;
  state.noun = data.device_noun || "GPU";
  $(".status", panel).textContent = data.title;
  $(".error-box", panel).hidden = true;
  const cards = SUMMARY[name].map((key) => {
    const line = findLine(data, key);
    const input = key in data.inputs ? {label: devWords(inputLabel(key)), value: data.inputs[key], text: ""} : null;
    const item = line || input;
    if (!item) return null;
    const cls = item.value === false ? "card bad" : item.value === true ? "card good" : "card";
    return el("div", {class: cls, "data-key": key}, el("span", {class: "label"}, item.label), el("span", {class: "value"}, display(item)));
  }).filter(Boolean);
  $(".summary", panel).replaceChildren(...cards);
  $(".charts", panel).replaceChildren(...drawCharts(data.charts || {}));
  $(".report", panel).replaceChildren(...reportTables(data));
}

function table(head, rows, formulaColumn = -1) {
  const thead = el("thead", {}, el("tr", {}, head.map((h) => el("th", {}, h))));
  const tbody = el("tbody", {}, rows.map((row) => el("tr", {}, row.map((cell, i) => el("td", i === formulaColumn ? {class: "formula"} : {}, cell)))));
  return el("div", {class: "scroll"}, el("table", {}, thead, tbody));
}

function range(line) {
  if (line.low == null || line.high == null) return "";
  return `${Number(line.low.toPrecision(4))} – ${Number(line.high.toPrecision(4))}`;
}

function reportTables(data) {
  const out = [];
  for (const section of data.sections) {
    out.push(el("h4", {}, devWords(section.title)),
      table([t("ui.quantity"), t("ui.value"), t("ui.range"), t("ui.formula")],
        section.lines.map((l) => [l.label, display(l), range(l), devWords(l.formula)]), 3));
  }
  for (const [title, records] of Object.entries(data.tables)) {
    if (!records.length) continue;
    const head = Object.keys(records[0]);
    out.push(el("h4", {}, devWords(title)), table(head.map(devWords), records.map((r) => head.map((h) => r[h]))));
  }
  if (data.assumptions.length) {
    out.push(el("h4", {}, t("ui.assumptions")), table([t("ui.assumptions"), t("ui.value"), t("ui.source"), t("ui.flag")],
      data.assumptions.map((a) => [devWords(a.label), `${devWords(a.value)}${a.user_set ? ` (${t("ui.set")})` : ""}`,
        a.source, a.flag]), 2));  // sources are quotations: as written
  }
  if (data.notes.length) {
    out.push(el("h4", {}, t("ui.notes")), el("ul", {}, data.notes.map((n) => el("li", {}, devWords(n)))));
  }
  return out;
}

// ------------------------------------------------------------------ SVG charts
const NS = "http://www.w3.org/2000/svg";
const W = 480, H = 280, M = {left: 58, right: 16, top: 44, bottom: 44};

function svgEl(tag, attrs, parent) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function svgText(parent, x, y, text, attrs = {}) {
  const node = svgEl("text", {x, y, "font-size": 11, ...attrs}, parent);
  node.textContent = text;
  return node;
}

function compact(v) {
  if (Number.isInteger(v) && Math.abs(v) < 1e4) return v.toLocaleString("en");
  for (const [scale, suffix] of [[1e9, "G"], [1e6, "M"], [1e3, "k"]]) {
    if (Math.abs(v) >= scale) return `${Number((v / scale).toPrecision(3))}${suffix}`;
  }
  return String(Number(v.toPrecision(3)));
}

function ticks(min, max, log) {
  if (log) {
    const out = [];
    for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
      for (const m of [1, 2, 5]) { const v = m * 10 ** e; if (v >= min * 0.999 && v <= max * 1.001) out.push(v); }
    }
    return out.length >= 2 ? out : [min, max];
  }
  const step0 = (max - min) / 5 || 1;
  const mag = 10 ** Math.floor(Math.log10(step0));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= step0);
  const out = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function scale(min, max, a, b, log) {
  if (log) { const lo = Math.log(min), hi = Math.log(max); return (v) => a + (Math.log(v) - lo) / (hi - lo || 1) * (b - a); }
  return (v) => a + (v - min) / (max - min || 1) * (b - a);
}

function extent(values, log, zero) {
  const vs = values.filter((v) => Number.isFinite(v) && (!log || v > 0));
  let lo = Math.min(...vs), hi = Math.max(...vs);
  if (zero && !log) lo = Math.min(0, lo);
  if (lo === hi) { lo = log ? lo / 2 : lo - 1; hi = log ? hi * 2 : hi + 1; }
  return log ? [lo / 1.15, hi * 1.15] : [lo, hi + (hi - lo) * 0.05];
}

// A line/scatter chart: series [{name, color, points: [[x, y, tip]], line, marker}], vertical markers.
function plot({name, title, xLabel, yLabel, series, xLog, yLog, xTicks, vlines = [], yZero = false}) {
  const svg = svgEl("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title});
  const xs = series.flatMap((s) => s.points.map((p) => p[0])).concat(vlines.map((v) => v.x));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const [x0, x1] = extent(xs, xLog, false), [y0, y1] = extent(ys, yLog, yZero);
  const sx = scale(x0, x1, M.left, W - M.right, xLog), sy = scale(y0, y1, H - M.bottom, M.top, yLog);
  const axis = svgEl("g", {class: "axis"}, svg);
  for (const v of ticks(y0, y1, yLog)) {
    svgEl("line", {x1: M.left, x2: W - M.right, y1: sy(v), y2: sy(v), class: "grid"}, axis);
    svgText(axis, M.left - 4, sy(v) + 4, compact(v), {"text-anchor": "end", "font-size": 10});
  }
  for (const v of (xTicks || ticks(x0, x1, xLog)).filter((v) => v >= x0 && v <= x1)) {
    svgEl("line", {x1: sx(v), x2: sx(v), y1: H - M.bottom, y2: H - M.bottom + 4}, axis);
    svgText(axis, sx(v), H - M.bottom + 15, compact(v), {"text-anchor": "middle", "font-size": 10});
  }
  svgEl("path", {d: `M${M.left},${M.top}V${H - M.bottom}H${W - M.right}`, fill: "none"}, axis);
  svgText(svg, (M.left + W - M.right) / 2, H - 6, xLabel, {"text-anchor": "middle"});
  svgText(svg, 12, (M.top + H - M.bottom) / 2, yLabel, {"text-anchor": "middle", transform: `rotate(-90 12 ${(M.top + H - M.bottom) / 2})`});
  svgText(svg, W / 2, 16, title, {"text-anchor": "middle", "font-size": 13, "font-weight": 600});
  for (const v of vlines) {
    const x = sx(v.x), right = x > W - M.right - 90;
    svgEl("line", {x1: x, x2: x, y1: M.top, y2: H - M.bottom, stroke: "#555", "stroke-dasharray": "4 3"}, svg);
    svgText(svg, right ? x - 3 : x + 3, H - M.bottom - 6, v.label, {"font-size": 10, "text-anchor": right ? "end" : "start"});
  }
  let legendX = M.left;
  series.forEach((s, i) => {
    const pts = s.points.filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1]) && (!xLog || p[0] > 0) && (!yLog || p[1] > 0));
    const g = svgEl("g", {class: "series", "data-series": s.name}, svg);
    if (s.line !== false && pts.length > 1) {
      svgEl("path", {d: pts.map((p, j) => `${j ? "L" : "M"}${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(""),
        fill: "none", stroke: s.color, "stroke-width": 2}, g);
    }
    for (const p of pts) {
      const dot = s.marker === "star"
        ? svgEl("path", {d: star(sx(p[0]), sy(p[1]), 9), fill: s.color}, g)
        : svgEl("circle", {cx: sx(p[0]), cy: sy(p[1]), r: s.radius || 3.5, fill: s.color}, g);
      svgEl("title", {}, dot).textContent = p[2] || `${compact(p[0])}, ${compact(p[1])}`;
    }
    legendX = legend(svg, legendX, 32, s.color, s.label || s.name);
  });
  return figure(name, svg);
}

function star(cx, cy, r) {
  const pts = [];
  for (let i = 0; i < 10; i++) {
    const a = Math.PI / 2 + i * Math.PI / 5, rr = i % 2 ? r / 2.4 : r;
    pts.push(`${(cx + rr * Math.cos(a)).toFixed(1)},${(cy - rr * Math.sin(a)).toFixed(1)}`);
  }
  return `M${pts.join("L")}Z`;
}

// A legend entry at (x, y); returns the x where the next entry can start.
function legend(svg, x, y, color, label) {
  svgEl("rect", {x, y: y - 8, width: 10, height: 10, fill: color}, svg);
  svgText(svg, x + 14, y + 1, label, {"font-size": 10});
  const width = Array.from(String(label)).reduce((w, ch) => w + (ch.codePointAt(0) > 0x2e80 ? 11 : 6), 0);
  return x + 30 + width;
}

function figure(name, svg) {
  const fig = el("figure", {class: "chart", "data-chart": name});
  fig.append(svg);
  return fig;
}

function memoryChart(data) {
  const width = 640, rowH = 26, top = 30, cols = 3, colW = 200;
  const items = data.parts.map((p) => [p.color, tc(`chart.${p.key}`)])
    .concat([["rgba(85,85,85,0.35)", tc("chart.margin")], ["#000", tc("chart.capacity")]]);
  const axisY = top + data.gpus.length * rowH + 4;
  const height = axisY + 44 + Math.ceil(items.length / cols) * 15;
  const svg = svgEl("svg", {viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": tc("chart.memory_title")});
  const gib = 2 ** 30, left = 120, right = width - 80;
  const max = Math.max(data.total, ...data.gpus.map((g) => g.capacity)) / gib * 1.05;
  const sx = (v) => left + v / max * (right - left);
  svgText(svg, width / 2, 16, tc("chart.memory_title"), {"text-anchor": "middle", "font-size": 13, "font-weight": 600});
  for (const v of ticks(0, max, false)) {
    svgEl("line", {x1: sx(v), x2: sx(v), y1: top - 4, y2: axisY, class: "grid"}, svg);
    svgText(svg, sx(v), axisY + 12, compact(v), {"text-anchor": "middle", "font-size": 10});
  }
  svgText(svg, (left + right) / 2, axisY + 26, tc("chart.memory_axis"), {"text-anchor": "middle"});
  data.gpus.forEach((gpu, row) => {
    const y = top + row * rowH;
    const g = svgEl("g", {class: "bar", "data-gpu": gpu.id}, svg);
    svgText(g, left - 6, y + 14, gpu.id, {"text-anchor": "end", "font-size": 10});
    let x = 0;
    for (const part of data.parts) {
      const w = part.bytes / gib;
      const rect = svgEl("rect", {x: sx(x), y: y + 3, width: Math.max(sx(x + w) - sx(x), 0), height: rowH - 8,
        fill: part.color, "data-part": part.key}, g);
      svgEl("title", {}, rect).textContent = `${tc(`chart.${part.key}`)}: ${compact(w)} GiB`;
      x += w;
    }
    const cap = gpu.capacity / gib, band = cap * data.margin_fraction;
    const margin = svgEl("rect", {x: sx(cap - band), y: y + 1, width: sx(cap) - sx(cap - band), height: rowH - 4,
      fill: "rgba(85,85,85,0.18)", stroke: "#555", "stroke-dasharray": "3 2", class: "margin"}, g);
    svgEl("title", {}, margin).textContent = `${tc("chart.margin")}: ${compact(band)} GiB`;
    const capLine = svgEl("line", {x1: sx(cap), x2: sx(cap), y1: y, y2: y + rowH - 2, stroke: "#000", "stroke-width": 2.5,
      class: "capacity"}, g);
    svgEl("title", {}, capLine).textContent = `${tc("chart.capacity")}: ${compact(cap)} GiB`;
    svgText(g, Math.max(sx(cap), sx(x)) + 5, y + 14, t(gpu.fits ? "chart.fits" : "chart.does_not_fit"),
      {"font-size": 10, fill: gpu.fits ? "#2e7d32" : "#c62828", class: "verdict"});
  });
  items.forEach(([color, label], i) => legend(svg, 40 + (i % cols) * colW, axisY + 46 + Math.floor(i / cols) * 15, color, label));
  const fig = figure("memory", svg);
  fig.classList.add("wide");
  return fig;
}

function drawCharts(charts) {
  const out = [];
  if (charts.memory) out.push(memoryChart(charts.memory));
  if (charts.cluster) {
    const c = charts.cluster, sel = c.selected ? [{x: c.selected, label: tc("chart.selected")}] : [];
    // a cost is null where the part has no price (the TPUs: 'n/a (no price: give --price)'): no point drawn for it
    const pts = (ys) => c.gpus.flatMap((g, i) => ys[i] == null ? []
      : [[g, ys[i], `${compact(g)} ${tc("chart.gpus")}: ${compact(ys[i])}`]]);
    out.push(plot({name: "cluster-time", title: tc("chart.time_title"), xLabel: tc("chart.gpus"), yLabel: tc("chart.days"),
      xLog: true, yLog: true, xTicks: c.gpus, vlines: sel,
      series: [{name: "days", label: tc("chart.days"), color: c.colors.on_demand, points: pts(c.days)}]}));
    const costs = [{name: "on_demand", label: tc("chart.on_demand"), color: c.colors.on_demand, points: pts(c.on_demand_usd)},
      {name: "spot", label: tc("chart.spot"), color: c.colors.spot, points: pts(c.spot_usd)}].filter((s) => s.points.length);
    if (costs.length) {
      out.push(plot({name: "cluster-cost", title: tc("chart.cost_title"), xLabel: tc("chart.gpus"), yLabel: tc("chart.usd"),
        xLog: true, yZero: true, xTicks: c.gpus, vlines: sel, series: costs}));
    }
  }
  if (charts.layouts) {
    const c = charts.layouts;
    const pts = (list) => list.map((p) => [p.gpus, p.days, `${p.layout}: ${compact(p.gpus)} ${devWords("GPUs")}, ${compact(p.days)} d`]);
    const gpus = [...new Set(c.top.concat(c.front).map((p) => p.gpus))].sort((a, b) => a - b);
    const series = [{name: "top", label: tc("chart.top_layouts"), color: c.colors.top, points: pts(c.top), line: false, radius: 5},
      {name: "front", label: tc("chart.pareto_front"), color: c.colors.front, points: pts(c.front)}];
    if (c.best && c.best.gpus) {
      series.push({name: "best", label: tc("chart.best"), color: "#000", marker: "star", line: false,
        points: [[c.best.gpus, c.best.days, `${tc("chart.best")}: ${c.best.layout}`]]});
    }
    out.push(plot({name: "layouts", title: tc("chart.pareto_title"), xLabel: tc("chart.gpus"), yLabel: tc("chart.ranked_days"),
      xLog: true, yLog: true, xTicks: gpus, series}));
  }
  if (charts.capacity) {
    const c = charts.capacity, limit = c.max_sequences ? [{x: c.max_sequences, label: tc("chart.max_sequences")}] : [];
    out.push(plot({name: "capacity", title: tc("chart.capacity_title"), xLabel: tc("chart.batch"), yLabel: tc("chart.tokens_per_s"),
      xLog: true, yZero: true, xTicks: c.batch, vlines: limit,
      series: [{name: "throughput", label: tc("chart.tokens_per_s"), color: c.colors.throughput,
        points: c.batch.map((b, i) => [b, c.tokens_per_s[i]])}]}));
    out.push(plot({name: "latency", title: tc("chart.tpot_ms"), xLabel: tc("chart.batch"), yLabel: "ms",
      xLog: true, yZero: true, xTicks: c.batch, vlines: limit,
      series: [{name: "latency", label: tc("chart.tpot_ms"), color: c.colors.latency, points: c.batch.map((b, i) => [b, c.tpot_ms[i]])}]}));
  }
  return out;
}

// ------------------------------------------------------------------ catalogs and start-up
async function fillSelect(id, url, label) {
  const select = $(`#${id}`);
  const keep = select.value;
  const data = await (await fetch(url)).json();
  const records = Object.values(data.tables)[0] || [];
  select.replaceChildren(...records.map((r) => new Option(label(r), r.id)));
  if (records.some((r) => r.id === keep)) select.value = keep;
}

async function start() {
  const params = new URLSearchParams(location.hash.slice(1));
  await loadLanguage(["en", "zh"].includes(params.get("lang")) ? params.get("lang") : "en");
  await Promise.all([
    fillSelect("model", "/api/catalog/models", (r) => `${r.id} (${r.params})`),
    fillSelect("gpu", "/api/catalog/gpus", (r) => `${r.name} (${r.memory})`),
  ]);
  applyState(params);
  $$("input[name=source]").forEach((r) => r.addEventListener("change", showSource));
  $("#plan-form").addEventListener("submit", (event) => { event.preventDefault(); runAll(); });
  $("#lang").addEventListener("change", async (event) => {
    await loadLanguage(event.target.value);
    if (Object.keys(state.results).length) await runAll();
    else history.replaceState(null, "", encodeState(readForm()));
  });
  $("#copy-link").addEventListener("click", async () => {
    history.replaceState(null, "", encodeState(readForm()));
    try { await navigator.clipboard.writeText(location.href); } catch (e) { /* no clipboard: the URL bar has it */ }
    $("#copy-status").textContent = t("ui.link_copied");
  });
  document.body.dataset.started = "true";
  await runAll(false);  // the answer on load: the link's, or the CLI's defaults (the article's 7B example)
}

document.addEventListener("DOMContentLoaded", start);
