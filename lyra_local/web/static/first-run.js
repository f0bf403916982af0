/* The first run, on the small demonstration model: a short guide that says what this machine has (GPU and
 * memory), suggests the chat model that fits it with its size and time to download, and offers one button,
 * Download and use (pull, checked by the server, then applied), and the way for a file the person already
 * has. It stays until dismissed. Nothing is downloaded until the button is clicked. */
import { api } from "./api.js";
import { $, el } from "./dom.js";
import { bytes, duration, pullView, startPull } from "./model-pull.js";
import { showSection } from "./panels.js";

export function firstRun(demo) {
  const banner = $("first-run");
  banner.hidden = !demo || localStorage.getItem("lyra-first-run-dismissed") === "1";
  const openSettingsAt = (id) => (e) => {
    e.preventDefault();
    showSection("settings", id);
  };
  $("first-run-models").addEventListener("click", openSettingsAt("h-models"));
  $("first-run-import").addEventListener("click", openSettingsAt("import-file"));
  $("first-run-dismiss").addEventListener("click", () => {
    localStorage.setItem("lyra-first-run-dismissed", "1");
    banner.hidden = true;
  });
  if (!banner.hidden) showGuide();
}

/* The machine and the suggestion, from the server (it reads the GPU and RAM; nothing leaves this machine). */
async function showGuide() {
  let info;
  try {
    info = await api("/api/models/first-run");
  } catch (e) { return; }  // the guide is a help: the line above it still points at Settings → Models
  if (!info.demo) return;
  $("first-run-machine").textContent = `This machine: ${info.machine.text}.`;
  $("first-run-own").textContent = `Have a GGUF file already? Put it in ${info.models_dir} and choose it in ` +
    "Settings → Models.";
  const rec = info.recommended;
  const button = $("first-run-download");
  if (rec) {
    $("first-run-suggestion").textContent = `Suggested for it: ${rec.title}, ${bytes(rec.size)} (${rec.fit.text}, ` +
      `with ${rec.n_ctx.toLocaleString("en")} tokens of context); ${duration(rec.download_s)} to download at ` +
      `${info.assumed_mbit_s} Mbit/s.`;
    button.setAttribute("aria-label", `Download ${rec.title} and use it for chat`);
    button.addEventListener("click", () => downloadAndUse(rec, button));
  } else {
    $("first-run-suggestion").textContent = "No model of the catalog fits this machine's memory.";
    button.hidden = true;
  }
  $("first-run-guide").hidden = false;
}

async function downloadAndUse(rec, button) {
  button.disabled = true;
  const where = $("first-run-pull");
  try {
    await startPull(rec.name, (job) => {
      where.replaceChildren(pullView(job));
      if (job.state === "done") use(job.path_name, rec.n_ctx, button);
      else if (job.state !== "running") button.disabled = false;
    });
  } catch (e) {
    where.replaceChildren(el("p", { class: "danger-link", text: e.message }));
    button.disabled = false;
  }
}

/* Apply, at the context the suggestion was sized for: the server loads the new file and has it reply once
 * before it swaps it in; a refusal says why. */
async function use(file, nCtx, button) {
  const status = el("p", { role: "status", text: "Loading and checking it…" });
  $("first-run-pull").append(status);
  try {
    await api("/api/models/choice", { method: "PUT", body: { roles: { chat: { file, n_ctx: nCtx } } } });
    $("first-run-line").replaceChildren("Chat now runs on ", el("strong", { text: file }),
      ": downloaded, checked and applied. Settings → Models has the other models, and what each needs.");
    $("first-run-guide").hidden = true;
  } catch (e) {
    status.textContent = e.message;
    status.classList.add("danger-link");
    button.disabled = false;
  }
}
