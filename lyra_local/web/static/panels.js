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

/* Panel ``name`` shown (opened if it is not) and scrolled to the element ``id`` once what the panel loads is
 * laid out, with the focus on it: the first-run guide's links and Settings' own list of sections land there. */
export async function showSection(name, id) {
  const opening = shown === name ? null : togglePanel(name);
  await Promise.resolve(opening).catch(() => {});
  const target = $(id);
  const box = $("panel");  // the panel scrolls, not the page (scrollIntoView would move the page with it)
  box.scrollTop += target.getBoundingClientRect().top - box.getBoundingClientRect().top - 8;
  target.focus({ preventScroll: true });
}

/* Shows panel ``name``, or hides it when it is the one shown; what opening it returns (a promise when it loads). */
export function togglePanel(name) {
  const leaving = shown;
  shown = shown === name ? null : name;
  if (leaving && leaving !== shown) panels.get(leaving).close();
  $("panel").hidden = !shown;
  document.body.classList.toggle("panel-open", Boolean(shown));
  document.querySelectorAll(".tab").forEach((t) => t.setAttribute("aria-pressed", String(t.dataset.panel === shown)));
  document.querySelectorAll("#panel > section").forEach((s) => { s.hidden = s.dataset.panel !== shown; });
  if (!shown) return undefined;
  const panel = panels.get(shown);
  $("panel-title").textContent = panel.title;
  return panel.open();
}

export function wirePanels() {
  document.querySelectorAll(".tab").forEach((t) => t.addEventListener("click", () => togglePanel(t.dataset.panel)));
  $("close-panel").addEventListener("click", () => togglePanel(shown));
  // on a phone a panel covers the conversation: opening one (a search result's Open) shows it
  on("conversation-opened", () => { if (shown && NARROW.matches) togglePanel(shown); });
}
