/* The companion's four drives as meters (Memory's Advanced section and the Dream panel read the same source). */
import { el } from "./dom.js";

const NAMES = { continuity: "Continuity", coherence: "Coherence", curiosity: "Curiosity", stability: "Stability" };

export function gauges(container, drives) {
  container.replaceChildren(...Object.entries(NAMES).map(([key, label]) => {
    const value = drives && typeof drives[key] === "number" ? drives[key] : 0;
    const bar = el("div", { class: `gauge-fill ${key}` });
    bar.style.width = `${Math.round(value * 100)}%`;
    return el("div", { class: "gauge", role: "meter", "aria-label": label, "aria-valuemin": "0",
                       "aria-valuemax": "1", "aria-valuenow": value.toFixed(2) },
              el("span", { class: "gauge-label", text: label }),
              el("div", { class: "gauge-track" }, bar),
              el("span", { class: "gauge-value", text: value.toFixed(2) }));
  }));
}
