/* The companion's four drives as meters (Memory's Advanced section and the Dream panel read the same source),
   each with what it means in words: a bare "Coherence 0.39" tells a person nothing. */
import { el } from "./dom.js";

const NAMES = { continuity: "Continuity", coherence: "Coherence", curiosity: "Curiosity", stability: "Stability" };

// What raises each drive (lyra_local/mind/drives.py), and what the dream does when it is high.
export const MEANINGS = {
  continuity: "Conversations waiting to be summarised. When it is high, I summarise them.",
  coherence: "Summaries not yet folded into what I know about you, the timeline and the current arc.",
  curiosity: "What is new since I last reflected on how I am.",
  stability: "How caught up I am: full when nothing is waiting.",
};

export function gauges(container, drives) {
  container.replaceChildren(...Object.entries(NAMES).map(([key, label]) => {
    const value = drives && typeof drives[key] === "number" ? drives[key] : 0;
    const bar = el("div", { class: `gauge-fill ${key}` });
    bar.style.width = `${Math.round(value * 100)}%`;
    return el("div", { class: "gauge", role: "meter", "aria-label": label, "aria-valuemin": "0",
                       "aria-valuemax": "1", "aria-valuenow": value.toFixed(2), title: MEANINGS[key] },
              el("span", { class: "gauge-label", text: label }),
              el("div", { class: "gauge-track" }, bar),
              el("span", { class: "gauge-value", text: value.toFixed(2) }));
  }));
}

/* The drives' meanings as a list of terms, for a panel that shows the meters. */
export function explainDrives(container) {
  container.replaceChildren(...Object.entries(NAMES).flatMap(([key, label]) =>
    [el("dt", { text: label }), el("dd", { text: MEANINGS[key] })]));
}
