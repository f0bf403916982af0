/* The side panel and its tabs: each panel module registers itself here with its title and what opening
 * it does (and, if it holds something open, what closing it does). */
import { on } from "./bus.js";
import { $ } from "./dom.js";

const NARROW = window.matchMedia("(max-width: 760px)");  // where a panel covers the conversation

const panels = new Map();
let shown = null;

export function registerPanel(name, { title, open, close = () => {} }) {
  panels.set(name, { title, open, close });
}

export const isShown = (name) => shown === name;

/* Shows panel ``name``, or hides it when it is the one shown. */
export function togglePanel(name) {
  const leaving = shown;
  shown = shown === name ? null : name;
  if (leaving && leaving !== shown) panels.get(leaving).close();
  $("panel").hidden = !shown;
  document.body.classList.toggle("panel-open", Boolean(shown));
  document.querySelectorAll(".tab").forEach((t) => t.setAttribute("aria-pressed", String(t.dataset.panel === shown)));
  document.querySelectorAll("#panel > section").forEach((s) => { s.hidden = s.dataset.panel !== shown; });
  if (!shown) return;
  const panel = panels.get(shown);
  $("panel-title").textContent = panel.title;
  panel.open();
}

export function wirePanels() {
  document.querySelectorAll(".tab").forEach((t) => t.addEventListener("click", () => togglePanel(t.dataset.panel)));
  $("close-panel").addEventListener("click", () => togglePanel(shown));
  // on a phone a panel covers the conversation: opening one (a search result's Open) shows it
  on("conversation-opened", () => { if (shown && NARROW.matches) togglePanel(shown); });
}
