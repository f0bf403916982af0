/* Settings: the model manager (a model per role from the GGUF files in models_dir, or a model server; its
 * context and GPU layers), the catalog of known-good models with what fits this machine and their downloads,
 * then what this server runs on. Applying writes lyra.toml and reloads: the server loads and checks the new
 * models first and, if one fails, keeps the old ones and says why. */
import { api } from "./api.js";
import { $, el, fragment } from "./dom.js";
import { confirmForget, showError } from "./feedback.js";
import { bytes, discardPartial, follow, pullView, startPull } from "./model-pull.js";
import { isShown, registerPanel, showSection } from "./panels.js";

let ROLES = {};  // role -> { label, what, same, off }: the server's one list of roles (GET /api/kinds)
let shownChoices = {};  // role -> the choice as the form showed it, so Apply sends only what changed
let watching = null;  // the timer that follows re-embedding while the panel is open
let shownFiles = [];  // the files in models_dir as last listed (a downloaded file's role, when no catalog says)

async function loadSettings() {
  try {
    const [s, { files, models_dir }, offload, { roles }] = await Promise.all([
      api("/api/settings"), api("/api/models/files"), api("/api/models/offload"), api("/api/kinds")]);
    ROLES = Object.fromEntries(roles.map(({ role, ...info }) => [role, info]));
    shownFiles = files;
    for (const [role, why] of Object.entries(offload.roles)) if (s.roles[role]) s.roles[role].offload = why;
    renderModels(s, files);
    $("models-dir").textContent = `In ${models_dir}; a GGUF put there appears here.`;
    $("models-where").textContent = `Apply writes ${s.config_file_target}` +
      (s.config_file ? "" : " (created then)") + "; LYRA_* environment variables win over it.";
    const rows = [];
    rows.push(...s.warnings.map((w) => ["Warning", w]));
    rows.push(["GPU offload", s.gpu_offload ? "available" : "not in this build (CPU)"],
              ["Data directory", s.data_dir], ["Config file", s.config_file || "none yet (defaults)"],
              ["Version", s.version]);
    $("settings").replaceChildren(...rows.map(([k, v]) => el("tr", { class: k === "Warning" ? "warning" : null },
      el("th", { scope: "row", text: k }), el("td", { text: v }))));
    $("settings-how").textContent = s.how_to_change;
    followEmbedding();
  } catch (e) { showError(e.message); }
}

/* After the embedding model changed: how many memories still wait for a vector of the new one, every few
 * seconds until none does (recall uses the old vectors until then). */
async function followEmbedding() {
  clearTimeout(watching);
  const line = $("embed-progress");
  try {
    const e = await api("/api/models/embedding");
    if (!isShown("settings")) return;
    line.hidden = e.missing === 0 && e.in_use === e.model;
    const failed = e.state === "failed" && e.missing > 0;
    line.classList.toggle("warning", failed);
    line.textContent = failed
      ? `Re-embedding your memories with ${e.model} failed: ${e.error}. ${e.missing.toLocaleString()} left; ` +
        `Lyra tries again every few minutes, and recall uses ${e.in_use} meanwhile.`
      : e.missing > 0
      ? `Re-embedding your memories with ${e.model}: ${e.missing.toLocaleString()} left` +
        (e.in_use !== e.model ? `; recall uses ${e.in_use} until then.` : ".")
      : `Every memory has a vector of ${e.model}.`;
    // a failed run is tried again by the server every few minutes: no need to ask every 3 s meanwhile
    if (e.missing > 0 || e.in_use !== e.model) watching = setTimeout(followEmbedding, failed ? 30000 : 3000);
  } catch (err) { line.hidden = true; }
}

function stopFollowing() {
  clearTimeout(watching);
  watching = null;
}

/* "SmolLM2 135M · llama · 135M parameters · Q4_1 · 8k context · 98 MB", or why it cannot be used. */
function describeFile(f) {
  if (f.problem) return `cannot be used: ${f.problem}`;
  const parts = [f.title, f.architecture, f.parameters ? `${count(f.parameters)} parameters` : null, f.quantization,
                 f.context_length ? `${count(f.context_length, 1024)} context` : null, bytes(f.size),
                 f.role_hint === "chat" && !f.chat_template ? "no chat template" : null];
  return parts.filter(Boolean).join(" · ");
}

function count(n, unit = 1000) {
  const steps = unit === 1024 ? ["", "k", "M"] : ["", "k", "M", "B", "T"];
  let i = 0;
  while (n >= unit && i < steps.length - 1) { n /= unit; i++; }
  return `${n >= 10 || i === 0 ? Math.round(n) : n.toFixed(1)}${steps[i]}`;
}

function renderModels(s, files) {
  $("model-files").replaceChildren(fragment(files.map((f) => el("li", { class: f.problem ? "broken" : null },
    el("strong", { text: f.name }), " ", el("span", { class: f.problem ? "danger-link" : "muted", text: describeFile(f) }),
    f.used_by.length ? el("span", { class: "badge", text: `used for ${f.used_by.join(", ")}` }) : null))));
  if (!files.length) $("model-files").append(el("li", { class: "muted", text: "No GGUF file there yet." }));
  shownChoices = {};
  $("model-roles").replaceChildren(fragment(Object.entries(ROLES).map(([role, info]) =>
    roleFields(role, info, s.roles[role], files))));
  if (!s.gpu_offload) {  // said once for every role, not under each
    $("model-roles").append(el("p", { class: "hint cpu-build", text: "This build runs on the CPU: GPU layers other than 0 are ignored." }));
  }
}

/* One role's fieldset: where its model comes from (a file, a server, same as chat, off), and its settings. */
function roleFields(role, info, current, files) {
  const id = (what) => `model-${role}-${what}`;
  const sourceNow = !current ? "off" : current.shared_with ? "same" : current.backend === "server" ? "server" : "file";
  const source = el("select", { id: id("source"), "aria-label": `${info.label}: where the model comes from` },
    el("option", { value: "file", text: "A file in the models folder" }),
    el("option", { value: "server", text: "A model server (llama.cpp)" }),
    info.same ? el("option", { value: "same", text: info.same }) : null,
    info.off ? el("option", { value: "off", text: info.off }) : null);
  source.value = sourceNow;
  const fileNow = current && current.backend === "local" ? current.model : "";
  const file = el("select", { id: id("file"), "aria-label": `${info.label}: model file` },
    fileNow && !files.some((f) => f.name === fileNow) ? el("option", { value: fileNow, text: `${fileNow} (not in the models folder)` }) : null,
    fragment(files.map((f) => el("option", { value: f.name,
      text: `${f.name}${f.problem ? " — cannot be used" : f.role_hint !== role && !(role === "summary" && f.role_hint === "chat") ? ` — looks made for ${f.role_hint}` : ""}` }))));
  if (!fileNow && !files.length) file.append(el("option", { value: "", text: "(no GGUF in the models folder)" }));
  file.value = fileNow || (files.find((f) => !f.problem && f.role_hint === (role === "summary" ? "chat" : role)) || {}).name || "";
  const about = el("p", { class: "hint model-about" });
  const showAbout = () => {
    const f = files.find((x) => x.name === file.value);
    about.textContent = f ? describeFile(f) : "";
    about.classList.toggle("danger-link", Boolean(f && f.problem));
  };
  file.addEventListener("change", showAbout);
  showAbout();
  const ctx = el("input", { id: id("ctx"), type: "number", min: "64", step: "64", "aria-label": `${info.label}: context (tokens)`,
                            value: current && current.n_ctx ? String(current.n_ctx) : "" });
  const layers = el("input", { id: id("layers"), class: "layers", pattern: "auto|-1|[0-9]+", inputmode: "text",
                               "aria-label": `${info.label}: GPU layers (auto = as many as fit, -1 = all)`,
                               value: current && current.backend === "local" ? String(current.n_gpu_layers) : "auto" });
  const url = el("input", { id: id("url"), type: "url", placeholder: "http://gpu-box:8080", "aria-label": `${info.label}: server URL`,
                            value: current && current.backend === "server" ? current.base_url : "" });
  const name = el("input", { id: id("name"), placeholder: "default", "aria-label": `${info.label}: model name on the server`,
                             value: current && current.backend === "server" ? current.model : "" });
  const local = el("div", { class: "model-local" }, file, about,
    el("div", { class: "row" }, el("label", { class: "small", for: id("ctx"), text: "Context" }), ctx,
       el("label", { class: "small", for: id("layers"), text: "GPU layers" }), layers),
    current && current.offload ? el("p", { class: "hint model-offload", text: `Now: ${current.offload}` }) : null);
  const server = el("div", { class: "model-server" }, url, name);
  const show = () => { local.hidden = source.value !== "file"; server.hidden = source.value !== "server"; };
  source.addEventListener("change", show);
  show();
  const read = () => (source.value === "file" ? { file: file.value, n_ctx: number(ctx), n_gpu_layers: gpuLayers(layers) }
    : source.value === "server" ? { base_url: url.value.trim(), model: name.value.trim() || "default" }
    : source.value === "same" ? { same_as: "chat" } : { off: true });
  const box = el("fieldset", { class: "model-role", "data-role": role },
    el("legend", {}, el("strong", { text: info.label }), el("span", { class: "muted", text: ` — ${info.what}` })),
    source, local, server);
  box.read = read;
  shownChoices[role] = JSON.stringify(read());
  return box;
}

function number(input) {
  const value = input.value.trim();
  return value === "" ? undefined : Number(value);
}

/* "auto" (as many layers as fit), or a number of layers (-1: all). */
function gpuLayers(input) {
  const value = input.value.trim().toLowerCase();
  return value === "auto" ? "auto" : number(input);
}

/* Apply: the roles whose choice changed, checked and loaded by the server before it swaps them in. */
async function apply(e) {
  e.preventDefault();
  const roles = {};
  for (const box of $("model-roles").querySelectorAll("fieldset")) {
    const choice = box.read();
    const shown = shownChoices[box.dataset.role];
    if (JSON.stringify(choice) === shown) continue;
    // a context or GPU layers left as shown is not sent: the role keeps what it has (an environment variable's
    // value included), so the file gets only what the person changed
    const before = JSON.parse(shown);
    if ("file" in choice && "file" in before) for (const key of ["n_ctx", "n_gpu_layers"]) if (choice[key] === before[key]) delete choice[key];
    roles[box.dataset.role] = choice;
  }
  const status = $("models-status");
  status.classList.remove("danger-link");
  if (!Object.keys(roles).length) { status.textContent = "Nothing changed."; return; }
  status.textContent = "Loading and checking the new model…";
  $("models-apply").disabled = true;
  try {
    const done = await api("/api/models/choice", { method: "PUT", body: { roles } });
    await loadSettings();
    status.textContent = `Applied: ${Object.keys(roles).map((r) => ROLES[r].label.toLowerCase()).join(", ")} ` +
      `now on the new model; written to ${done.config_file}.`;
  } catch (err) {
    status.textContent = err.message;  // "not applied (… unchanged, the running models keep serving): why"
    status.classList.add("danger-link");
  } finally {
    $("models-apply").disabled = false;
  }
}

/* The catalog: each known-good model with where it would run here, and a button to download it (or use it,
 * once here). Read when the panel opens; the server reads the GPU and RAM, and nothing is downloaded. */
async function loadCatalog() {
  try {
    const [{ machine, models }, { jobs }] = await Promise.all([api("/api/models/catalog"), api("/api/models/pulls")]);
    $("machine-line").textContent = `This machine: ${machine.text}. Where each model would run is estimated at ` +
      "its role's context, after the other models.";
    $("model-catalog").replaceChildren(fragment(Object.entries(CATALOG_GROUPS).flatMap(([role, title]) => {
      const entries = models.filter((m) => m.role === role);
      return entries.length ? [el("li", { class: "catalog-group", text: title }), ...entries.map(catalogItem)] : [];
    })));
    for (const job of jobs) if (job.state === "running") follow(job, showPull);  // one started elsewhere
  } catch (e) { $("machine-line").textContent = e.message; }
}

const CATALOG_GROUPS = { chat: "For chat and summaries", embed: "For embeddings", rerank: "Re-rankers" };

function catalogItem(m) {
  const facts = [bytes(m.size), m.quantization, `${count(m.parameters)} parameters`,
                 `${count(m.context_length, 1024)} context`, m.licence].join(" · ");
  const action = m.downloaded
    ? el("button", { type: "button", text: `Use for ${m.role}`, "aria-label": `Use ${m.title} for ${m.role}`,
                     onclick: () => useModel(m.file, m.role) })
    : el("button", { type: "button", text: m.partial ? "Resume download" : "Download", "aria-label": `Download ${m.title}`,
                     onclick: (e) => download(m.name, e.target) });
  const kept = !m.downloaded && m.partial > 0;
  return el("li", { class: "catalog-entry", "data-name": m.name },
    el("div", { class: "row" }, el("strong", { text: m.title }),
       el("span", { class: `badge fit-${m.fit.kind}`, text: m.fit.text }),
       m.downloaded ? el("span", { class: "badge", text: "downloaded" }) : null,
       kept ? el("span", { class: "badge", text: `partial ${bytes(m.partial)}` }) : null, action,
       kept ? discardButton(m.name, m.title, m.partial) : null),
    el("p", { class: "hint", text: facts }), m.note ? el("p", { class: "hint", text: m.note }) : null,
    pullLines.get(m.name) || null);
}

/* Discard: after a question, what a stopped download left on the disk is deleted; then the catalog and the
 * download's line (if shown) say so, and offer Download again, from the beginning. */
function discardButton(name, title, size) {
  return el("button", { type: "button", class: "pull-discard", text: "Discard",
    "aria-label": `Discard the partial download of ${title}`, onclick: (e) => discard(name, title, size, e.target) });
}

async function discard(name, title, size, button) {
  if (!await confirmForget(`Discard the partial download of ${title}?`,
    `The ${bytes(size)} downloaded so far are deleted from the disk; a new download starts from the beginning.`,
    "Discard")) return;
  button.disabled = true;
  $("pull-status").textContent = "";
  try {
    const freed = await discardPartial(name);
    for (const line of $("panel").querySelectorAll(".pull")) {
      if (line.job && line.job.name === name && line.job.state !== "running") showPull({ ...line.job, partial: 0, discarded: freed });
    }
    await loadCatalog();
  } catch (e) {
    $("pull-status").textContent = e.message;  // a 409: it is downloading again (cancel it first)
    button.disabled = false;
  }
}

/* An ended download that did not finish: Resume and Discard while its bytes are kept, else Download again. */
function again(job) {
  const label = job.partial > 0 ? "Resume" : "Download";
  const start = el("button", { type: "button", text: label, "aria-label": `${label} ${job.title}`,
                               onclick: (e) => download(job.name, e.target) });
  return job.partial > 0 ? [start, discardButton(job.name, job.title, job.partial)] : [start];
}

async function download(name, button) {
  if (button) button.disabled = true;
  const entry = button ? button.closest(".catalog-entry") : null;
  entry?.querySelector(".pull-refused")?.remove();
  try {
    const job = await startPull(name, showPull);
    document.querySelector(`.pull[data-job="${CSS.escape(job.id)}"]`)?.scrollIntoView({ block: "nearest" });
  } catch (e) {  // refused before it began: said beside the button pressed
    if (entry) entry.append(el("p", { class: "hint danger-link pull-refused", role: "status", text: e.message }));
    else $("pull-status").textContent = e.message;
  } finally {
    if (button) button.disabled = false;
  }
}

const pullLines = new Map();  // a catalog model's name -> its download's line, kept in its entry across re-renders

/* A download's view in the list, replaced at every step; once done, the catalog shows it downloaded. */
function showPull(job) {
  const node = pullView(job, (done) => el("button", { type: "button", class: "primary",
    text: `Use it for ${roleOf(done)}`, onclick: () => useModel(done.path_name, roleOf(done)) }), again);
  node.job = job;  // what Discard in the catalog updates
  const entry = $("model-catalog").querySelector(`.catalog-entry[data-name="${CSS.escape(job.name)}"]`);
  const shown = document.querySelector(`.pull[data-job="${CSS.escape(job.id)}"]`);
  if (entry) pullLines.set(job.name, node);  // a catalog model's download: its line (and how it failed) in its entry
  if (shown) shown.replaceWith(node);
  else if (entry) {
    entry.querySelector(".pull")?.remove();
    entry.append(node);
  } else {
    // one line per file: a new download of it takes the place of how the last one ended
    for (const old of $("pulls").querySelectorAll(".pull")) if (old.dataset.file === node.dataset.file) old.remove();
    $("pulls").prepend(node);
  }
  // ended: the catalog shows the file downloaded, or its kept bytes with Resume and Discard
  if (job.state !== "running" && job.discarded === undefined && isShown("settings")) loadCatalog();
}

/* A catalog entry's role; else the role the downloaded file's header says it is made for (chat if unsure). */
function roleOf(job) {
  const file = shownFiles.find((f) => f.name === job.path_name);
  const hint = job.role || (file && file.role_hint);
  return hint in ROLES ? hint : "chat";
}

/* Chooses a file for a role and applies it: the server loads and checks it before it swaps it in. */
async function useModel(file, role) {
  await loadSettings();  // the new file in the lists
  const source = $(`model-${role}-source`);
  source.value = "file";
  source.dispatchEvent(new Event("change"));
  const select = $(`model-${role}-file`);
  select.value = file;
  select.dispatchEvent(new Event("change"));
  $("models-form").requestSubmit();
}

function pullOwn(e) {
  e.preventDefault();
  const ref = $("pull-ref").value.trim();
  $("pull-status").textContent = "";
  if (ref) download(ref, e.submitter);
}

registerPanel("settings", { title: "Settings", open: () => Promise.all([loadSettings(), loadCatalog()]),
                            close: stopFollowing });

export function wireSettingsPanel() {
  document.querySelectorAll("#settings-sections a").forEach((a) => a.addEventListener("click", (e) => {
    e.preventDefault();  // the address keeps naming the conversation open (#session=…)
    showSection("settings", a.getAttribute("href").slice(1));
  }));
  $("models-form").addEventListener("submit", apply);
  $("pull-form").addEventListener("submit", pullOwn);
}
