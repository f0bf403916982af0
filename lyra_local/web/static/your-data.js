/* Your data: import (ChatGPT or a Lyra export) with progress, export everything, download a backup. */
import { download, sse, upload } from "./api.js";
import { emit } from "./bus.js";
import { $ } from "./dom.js";
import { showError } from "./feedback.js";

async function importFile(file) {
  const status = $("import-status");
  const bar = $("import-progress");
  $("import-start").disabled = true;
  bar.hidden = false;
  bar.removeAttribute("value");
  status.textContent = `Uploading ${file.name}…`;
  try {
    const { job } = await upload(`/api/import?filename=${encodeURIComponent(file.name)}`, file);
    await sse(`/api/import/${job}/events`, {}, (event, progress) => {
      if (progress.total) { bar.max = progress.total; bar.value = progress.done; }
      status.textContent = `Importing ${progress.filename}: ${progress.done.toLocaleString()} of ${progress.total.toLocaleString()} messages`;
      if (event === "done") {
        const r = progress.report;
        status.textContent = `Imported ${r.messages.toLocaleString()} messages: ${r.sessions_new} new conversations, ` +
          `${r.sessions_updated} updated, ${r.sessions_unchanged} already here.` +
          skippedText(r.skipped) + (r.problems.length ? ` Not imported: ${r.problems.join("; ")}` : "") +
          (r.memory ? ` ${r.memory}.` : "");
        emit("sessions-changed");
      }
      if (event === "failed") showError(progress.error);
    });
  } catch (e) {
    showError(e.message);
    status.textContent = "";
  } finally {
    bar.hidden = true;
    $("import-start").disabled = false;
  }
}

/* What the import left out, as `lyra import` says it: "Skipped: instructions to ChatGPT (3), images (1)." */
function skippedText(skipped) {
  const counts = Object.entries(skipped || {}).filter(([, n]) => n).sort((a, b) => b[1] - a[1]);
  return counts.length ? ` Skipped: ${counts.map(([what, n]) => `${what} (${n.toLocaleString()})`).join(", ")}.` : "";
}

export function wireYourData() {
  $("import-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const file = $("import-file").files[0];
    if (file) importFile(file);
  });
  const save = (path) => () => download(path).catch((e) => showError(e.message));
  $("export").addEventListener("click", save("/api/export"));
  $("backup").addEventListener("click", save("/api/backup"));
}
