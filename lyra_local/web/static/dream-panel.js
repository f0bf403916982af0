/* The Dream panel: what is waiting, the last pass, "Dream now" with its progress in conversations, and what
   the dream did in sentences. Each log event arrives with ``says``, written by the server
   (lyra_local/mind/dream_sentences.py) with the conversations' titles; the drives and the raw log (kinds,
   targets, counts) are for developers, under Advanced. */
import { api, sse } from "./api.js";
import { $, el } from "./dom.js";
import { explainDrives, gauges } from "./drives.js";
import { showError, showNotice } from "./feedback.js";
import { registerPanel } from "./panels.js";

const D = window.LyraDates;
let following = null;  // the AbortController of the live log while the panel is open
let lastEvent = null;  // the log's last event seen, so a reopened panel goes on from it
const LOG_LINES = 200;

// What the pass is doing after the conversations, by the kind of its latest event. The kinds are declared in
// lyra_local/mind/dream_events.py; tests/test_dream_events.py fails when this panel names any other.
const PHASES = { profile: "learning about you", "profile.rejected": "learning about you",
                 digest: "writing the timeline", "digests.deleted": "writing the timeline",
                 narrative: "rewriting the current arc", world: "updating the core memory",
                 reflect: "reflecting", "reflect.kept": "reflecting" };
const progress = { total: null, done: 0, phase: "" };  // the pass in progress, as its events tell it

async function loadDream() {
  try {
    const status = await api("/api/dream");
    gauges($("dream-drives"), status.drives);
    explainDrives($("dream-drives-meaning"));
    const b = status.backlog;
    const stats = [["Conversations waiting to be summarised", b.sessions_pending],
                   ["New messages in them", b.turns_pending],
                   ["Summaries to learn about you from", b.unprofiled],
                   ["Timeline entries to write", b.digest_jobs + b.obsolete_digests],
                   ["New messages since my last reflection", b.novel_turns]];
    $("backlog").replaceChildren(...stats.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]));
    $("last-pass").textContent = lastPass(status.last_pass, status.last_pass_says);
    setDreaming(status.running);
    if (!following) followLog();
  } catch (e) { showError(e.message); }
}

function lastPass(last, says) {
  if (!last) return "I have not dreamt yet.";
  const when = D.momentLabel(last.finished_at);  // the page's one way of saying a day: "Sat 28 Nov 2026, 05:26"
  if (last.status === "deferred") return `The last dream (${when}) stopped early: the model could not be reached.`;
  if (last.status === "failed") return `The last dream (${when}) stopped: something went wrong.`;
  return `Last dreamt ${when}: ${says || "nothing needed doing"}.`;
}

function setDreaming(on) {
  $("dream-progress").hidden = !on;
  $("dream-now").disabled = on;
  $("dream-now").textContent = on ? "Dreaming…" : "Dream now";
  if (on && progress.total === null) $("dream-progress-text").textContent = "Dreaming…";
}

/* "3 of 6 conversations", and what comes after them; the bar fills with the conversations summarised. */
function showProgress(ended) {
  const bar = $("dream-progress");
  const { total, done, phase } = progress;
  if (total) {
    bar.max = total;
    bar.value = Math.min(done, total);
  } else {
    bar.removeAttribute("value");  // no conversations to count: the other work has no known length
  }
  const counted = total ? `${Math.min(done, total)} of ${total} conversation${total === 1 ? "" : "s"}` : "";
  let text;
  if (ended) text = counted ? `Summarised ${counted}.` : "";
  else if (phase) text = counted ? `Summarised ${counted}; now ${phase}…` : `Now ${phase}…`;
  else text = counted ? `Summarising: ${counted}…` : "Dreaming…";
  $("dream-progress-text").textContent = text;
}

function track(event) {
  const target = event.target || "";
  if (event.kind === "pass.start") {
    Object.assign(progress, { total: (event.detail?.backlog?.ripe) || 0, done: 0, phase: "" });
  } else if (progress.total === null) {
    return;  // a pass that started before the log we were sent: nothing to count
  } else if (event.kind === "gist" || (/^(skip|stale|error)$/.test(event.kind) && target.startsWith("gist:"))) {
    progress.done += 1;
  } else if (PHASES[event.kind]) {
    progress.phase = PHASES[event.kind];
  }
  showProgress(event.kind === "pass.end");
  if (event.kind === "pass.end") progress.total = null;
}

function followLog() {
  const controller = new AbortController();
  following = controller;
  const after = lastEvent === null ? "" : `?after=${lastEvent}`;
  sse(`/api/dream/events${after}`, { signal: controller.signal }, (event, data) => {
    lastEvent = data.id;
    logLine(data);
    track(data);
    if (data.kind === "pass.start") setDreaming(true);
    if (data.kind === "pass.end") { setDreaming(false); loadDream(); }
  }).catch((e) => { if (e.name !== "AbortError") showError(e.message); });
}

function stopFollowing() {
  if (following) following.abort();
  following = null;
}

function append(log, line) {
  log.append(line);
  while (log.childElementCount > LOG_LINES) log.firstElementChild.remove();
  log.scrollTop = log.scrollHeight;
}

function logLine(event) {
  const time = new Date(event.at.endsWith("Z") || event.at.includes("+") ? event.at : event.at + "Z");
  const stamp = () => el("time", { datetime: event.at, text: D.timeLabel(time.toISOString()) });
  append($("dream-log"), el("li", { class: `log-${event.kind.replace(".", "-")}` },
                            stamp(), el("span", { text: " " + (event.says || event.kind) })));
  const raw = `${event.kind} ${event.target || ""} ${event.detail ? JSON.stringify(event.detail) : ""}`;
  append($("dream-raw"), el("li", {}, stamp(), el("code", { text: " " + raw.trim() })));
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
