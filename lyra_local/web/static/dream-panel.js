/* The Dream panel: what is waiting to be consolidated, the last pass, "Dream now", and the live log. */
import { api, sse } from "./api.js";
import { $, el } from "./dom.js";
import { gauges } from "./drives.js";
import { showError, showNotice } from "./feedback.js";
import { registerPanel } from "./panels.js";

let following = null;  // the AbortController of the live log while the panel is open
let lastEvent = null;  // the log's last event seen, so a reopened panel goes on from it

async function loadDream() {
  try {
    const status = await api("/api/dream");
    gauges($("dream-drives"), status.drives);
    const b = status.backlog;
    const stats = [["Sessions waiting", b.sessions_pending], ["Turns waiting", b.turns_pending],
                   ["Gists to read", b.unprofiled], ["Digests to write", b.digest_jobs + b.obsolete_digests],
                   ["Since last reflection", `${b.novel_turns} turns`]];
    $("backlog").replaceChildren(...stats.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]));
    const last = status.last_pass;
    $("last-pass").textContent = last ? `Last pass: ${last.status}, ${new Date(last.finished_at).toLocaleString()}` +
      `, ${(last.actions || []).length} thing(s) done.` : "No pass yet.";
    setDreaming(status.running);
    if (!following) followLog();
  } catch (e) { showError(e.message); }
}

function setDreaming(on) {
  $("dream-progress").hidden = !on;
  $("dream-now").disabled = on;
  $("dream-now").textContent = on ? "Dreaming…" : "Dream now";
}

function followLog() {
  const controller = new AbortController();
  following = controller;
  const after = lastEvent === null ? "" : `?after=${lastEvent}`;
  sse(`/api/dream/events${after}`, { signal: controller.signal }, (event, data) => {
    lastEvent = data.id;
    logLine(data);
    if (data.kind === "pass.start") setDreaming(true);
    if (data.kind === "pass.end") { setDreaming(false); loadDream(); }
  }).catch((e) => { if (e.name !== "AbortError") showError(e.message); });
}

function stopFollowing() {
  if (following) following.abort();
  following = null;
}

function logLine(event) {
  const d = event.detail || {};
  const target = event.target || "";
  const describeEvent = {
    "pass.start": () => (d.forced ? "dream pass started (forced)" : "dream pass started"),
    "pass.end": () => `dream pass ${d.status}: ${d.actions ?? 0} thing(s) done`,
    gist: () => `summarized ${target}${d.progress ? ` (${d.progress})` : ""}`,
    profile: () => `read ${target}: ${Object.keys(d.facts || {}).join(", ") || "no new facts"}`,
    digest: () => `wrote the ${target.replace(":", " digest ")}`,
    narrative: () => "rewrote the current arc",
    reflect: () => `reflected: ${d.mood ?? ""}`,
    backoff: () => `model unreachable, retrying in ${d.delay_s}s`,
    skip: () => `${target}: another worker has it`,
    waiting: () => `${target}: waiting for another worker`,
    error: () => `${target}: ${d.error}`,
  }[event.kind];
  const what = describeEvent ? describeEvent() : `${event.kind} ${target}`;
  const time = new Date(event.at.endsWith("Z") || event.at.includes("+") ? event.at : event.at + "Z");
  const line = el("li", { class: `log-${event.kind.replace(".", "-")}` },
                  el("time", { datetime: event.at, text: time.toLocaleTimeString() }), el("span", { text: " " + what }));
  const log = $("dream-log");
  log.append(line);
  while (log.childElementCount > 200) log.firstElementChild.remove();
  log.scrollTop = log.scrollHeight;
}

registerPanel("dream", { title: "Dream", open: loadDream, close: stopFollowing });

export function wireDreamPanel() {
  $("dream-now").addEventListener("click", async () => {
    try {
      setDreaming(true);
      const result = await api("/api/dream?force=true", { method: "POST" });
      if (!result.started) showNotice(result.reason);
    } catch (e) { setDreaming(false); showError(e.message); }
  });
}
