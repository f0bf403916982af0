/* What the page tells the person: an error, a notice, a question before forgetting. */
import { $, el } from "./dom.js";

export function showError(message) {
  const box = $("error");
  box.replaceChildren(el("span", { text: message }), el("button", {
    class: "icon-button", "aria-label": "Dismiss", text: "✕", onclick: () => { box.hidden = true; } }));
  box.hidden = !message;
}

export function showNotice(message) {
  $("notice").textContent = message;
  $("notice").hidden = !message;
}

/* Asks before forgetting or deleting anything; resolves true when the person presses ``action`` ("Forget it"). */
export function confirmForget(title, text, action = "Forget it") {
  const dialog = $("confirm-dialog");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = action;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"),
                                                          { once: true }));
}
