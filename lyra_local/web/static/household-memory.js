/* The household memory in the Memory panel: what everyone's Lyra knows ("the dog is called Rex, bins go out on
 * Tuesday"), marked as shared with everyone in the household, editable by adults, each version kept with who
 * wrote it. Shown only in a household (while one person uses Lyra without logging in, the core memory is all). */
import { api } from "./api.js";
import { $, el, fragment, refreshEditor, saved } from "./dom.js";
import { showError } from "./feedback.js";
import { who } from "./login.js";

const D = window.LyraDates;

const authorName = (author) => (typeof author === "string" ? author : author?.name) || "someone";

export async function loadHouseholdMemory() {
  const box = $("household-memory");
  box.hidden = !who.me || Boolean(who.me.login_free);
  if (box.hidden) return;
  try {
    const { memory, can_edit: canEdit } = await api("/api/household/memory");
    const input = $("household-input");
    refreshEditor(input, memory ? memory.content : "");
    input.readOnly = !canEdit;
    $("household-save").hidden = !canEdit;
    $("household-who").textContent = memory ? `Last written by ${authorName(memory.author)}, ${D.momentLabel(memory.created_at)}.` :
      "Empty so far.";
    $("household-how").textContent = canEdit ? "Every adult here can edit it; every version is kept with who wrote it." :
      "Adults in the household edit it.";
    if ($("household-history").open) loadHistory();
  } catch (e) { showError(e.message); }
}

async function loadHistory() {
  try {
    const { versions } = await api("/api/household/memory/history");
    $("household-versions").replaceChildren(fragment(versions.map((v) => el("li", { class: "household-version" },
      el("p", { class: "muted small", text: `${authorName(v.author)}, ${D.momentLabel(v.created_at)}` }),
      el("pre", { text: v.content || "(emptied)" })))));
    if (!versions.length) $("household-versions").append(el("li", { class: "muted", text: "No version yet." }));
  } catch (e) { showError(e.message); }
}

export function wireHouseholdMemory() {
  $("household-history").addEventListener("toggle", () => { if ($("household-history").open) loadHistory(); });
  $("household-save").addEventListener("click", async () => {
    try {
      const content = $("household-input").value;
      await api("/api/household/memory", { method: "PUT", body: { content } });
      saved($("household-input"), content);
      $("household-status").textContent = "Saved: everyone in the household's Lyra knows it now.";
      setTimeout(() => { $("household-status").textContent = ""; }, 4000);
      loadHouseholdMemory();
    } catch (e) { showError(e.message); }
  });
}
