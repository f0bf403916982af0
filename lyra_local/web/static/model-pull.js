/* Downloading a model (Settings → Models, the first-run guide): start a pull on the server, follow it (bytes,
 * rate, time left) with a Cancel button, and say how it ended. Nothing is downloaded unless the person clicks:
 * this module only starts a pull from a click's handler. */
import { api } from "./api.js";
import { el } from "./dom.js";

const POLL_MS = 500;
const PATIENCE_MS = 15_000;  // a server busy or restarting for less than this is waited for, not a failure

export const bytes = (n) => (n >= 1e9 ? `${(n / 1e9).toFixed(1)} GB` : n >= 1e6 ? `${Math.round(n / 1e6)} MB`
  : `${Math.round(n / 1e3)} kB`);

/* "about 3 min", "about 40 s", "about 1 h 20 min". */
export function duration(seconds) {
  const s = Math.max(1, Math.round(seconds));
  if (s < 60) return `about ${s} s`;
  const minutes = Math.round(s / 60);
  if (minutes < 60) return `about ${minutes} min`;
  return `about ${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/* "1.2 GB of 4.7 GB · 12.3 MB/s · about 3 min left". */
export function progressText(job) {
  if (!job.done && !job.rate) return "Starting…";
  const parts = [job.total ? `${bytes(job.done)} of ${bytes(job.total)}` : bytes(job.done)];
  if (job.rate > 0) parts.push(`${bytes(job.rate)}/s`);
  if (job.eta_s !== null && job.eta_s !== undefined && job.rate > 0) parts.push(`${duration(job.eta_s)} left`);
  return parts.join(" · ");
}

const followers = new Map();  // job id -> the timer following it (one per job, however many views show it)

/* Starts pulling ``name`` (a catalog name, or owner/repo:File.gguf) and follows it; ``view`` is called with
 * the job at every step, the last time once it has ended (done, failed or cancelled). */
export async function startPull(name, view) {
  const { job } = await api("/api/models/pulls", { method: "POST", body: { name } });
  follow(job, view);
  return job;
}

/* Calls ``view`` with the job every POLL_MS until it has ended. The download runs on the server whatever the
 * page does: a poll that fails (a dropped connection, a busy or restarting server) is tried again for
 * PATIENCE_MS before the page says it lost track, and a 404 (a restarted server forgot the job) says so. */
export function follow(job, view, failingSince = null) {
  clearTimeout(followers.get(job.id));
  if (failingSince === null) view(job);
  if (job.state !== "running") { followers.delete(job.id); return; }
  followers.set(job.id, setTimeout(async () => {
    try {
      const { job: now } = await api(`/api/models/pulls/${encodeURIComponent(job.id)}`);
      follow(now, view);
    } catch (e) {
      const since = failingSince ?? Date.now();
      if (e.status !== 404 && Date.now() - since < PATIENCE_MS) { follow(job, view, since); return; }
      followers.delete(job.id);
      view({ ...job, state: "failed", error: { message: `this page lost track of the download: ${e.message}`,
        hint: "it may still be running on the server: reopen Settings → Models to see it" } });
    }
  }, POLL_MS));
}

export const cancelPull = (job) => api(`/api/models/pulls/${encodeURIComponent(job.id)}`, { method: "DELETE" });

/* Deletes what a stopped download of ``name`` (as a pull takes it) left on the server's disk; resolves to the
 * bytes freed. Refused (409) while that file downloads. */
export async function discardPartial(name) {
  const { freed } = await api(`/api/models/partials/${encodeURIComponent(name)}`, { method: "DELETE" });
  return freed;
}

/* One download as the page shows it: its name, a progress bar, the figures, Cancel; once ended, what happened
 * and, when done, ``used(job)``'s button (Use it for chat…) if given, else ``again(job)``'s (Resume, Discard). */
export function pullView(job, used, again) {
  const ended = job.state !== "running";
  const bar = el("progress", { max: String(job.total || 1), value: String(job.done), "aria-label": `Download of ${job.title}` });
  if (!job.total) bar.removeAttribute("value");  // size unknown yet: an indeterminate bar
  const line = el("p", { class: "hint pull-figures", role: "status",
    text: ended ? outcome(job, Boolean(again)) : job.cancelling ? "Cancelling…" : progressText(job) });
  if (job.state === "failed") line.classList.add("danger-link");
  const cancel = ended ? null : el("button", { type: "button", class: "pull-cancel", text: "Cancel",
    "aria-label": `Cancel the download of ${job.title}`, disabled: job.cancelling,
    onclick: async (e) => {
      e.target.disabled = true;
      try { await cancelPull(job); } catch (err) { line.textContent = err.message; }
    } });
  return el("div", { class: `pull pull-${job.state}`, "data-job": job.id, "data-file": job.path_name || job.file },
    el("div", { class: "row" }, el("strong", { text: job.title }), ended ? null : bar, cancel),
    line, job.state === "done" && used ? used(job) : null,
    ended && job.state !== "done" && again ? el("div", { class: "row pull-again" }, ...again(job)) : null);
}

function outcome(job, offered) {
  if (job.state === "done") return `Downloaded and checked: ${job.path_name} (${bytes(job.total || job.done)}).`;
  if (job.discarded !== undefined) return `Discarded: ${bytes(job.discarded)} freed; a new download starts from the beginning.`;
  if (job.state === "cancelled" && job.partial > 0) return `Cancelled: the ${bytes(job.partial)} downloaded are kept. ` +
    (offered ? "Resume goes on from there; Discard deletes them to free the space."
      : "Downloading it again goes on from there; Settings → Models can discard them to free the space.");
  const why = job.error ? `${job.error.message}${job.error.hint ? ` — ${job.error.hint}` : ""}` : "";
  return job.state === "cancelled" ? `Cancelled: ${why}` : `The download failed: ${why}`;
}
