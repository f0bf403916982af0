/* The Memory panel: this conversation's summary, About you, how the companion is, the current arc, the
 * timeline folded by month, the core memory and its proposals; the operations report under Advanced. */
import { api } from "./api.js";
import { on } from "./bus.js";
import { currentId, currentRemembered, people } from "./conversation.js";
import { $, el, fragment, refreshEditor, saved } from "./dom.js";
import { gauges } from "./drives.js";
import { renderProfile, wireFactForm } from "./facts.js";
import { showError } from "./feedback.js";
import { loadHouseholdMemory, wireHouseholdMemory } from "./household-memory.js";
import { memoryItem } from "./memory-items.js";
import { isShown, registerPanel } from "./panels.js";

const D = window.LyraDates;
let loads = 0;  // an older load that answers late must not overwrite a newer one

async function loadMemory() {
  const load = ++loads;
  loadHouseholdMemory();
  const sessionId = currentId();
  try {
    const [self, world, profile, narrative, timeline, sitrep, proposals, current] = await Promise.all([
      api("/api/self"), api("/api/world"), api("/api/profile"), api("/api/narrative"), api("/api/timeline"),
      api("/api/sitrep?format=text"), api("/api/world/proposals"),
      sessionId ? api(`/api/sessions/${sessionId}/gist`) : { gist: null }]);
    if (load !== loads) return;
    const gist = current.gist;
    renderProposals(proposals.proposals);
    if (!currentRemembered()) {
      $("session-gist").replaceChildren(el("p", { class: "muted", text: "Off the record: nothing of this conversation is summarized or remembered." }));
    } else {
      memoryItem($("session-gist"), { kind: "gist", id: gist && gist.id, text: gist && gist.content,
        method: gist && gist.method, label: "this conversation's summary", path: `/api/sessions/${sessionId}/gist`,
        emptyText: "No summary yet: the dream cycle writes one when the conversation rests." });
    }
    $("session-gist").dataset.session = sessionId ?? "";  // whose summary this is (a switch re-renders it)
    renderSelf(self);
    refreshEditor($("world-input"), world.world ? world.world.content : "");
    renderProfile(profile.facts);
    memoryItem($("narrative"), { kind: "narrative", id: narrative.id, text: narrative.narrative,
      method: narrative.method, label: "the current arc", path: "/api/narrative", emptyText: "Not written yet." });
    renderTimeline(timeline.months);
    $("sitrep").textContent = sitrep;
  } catch (e) { showError(e.message); }
}

/* How the companion is, in words ("Lyra feels calm, and full of energy."); the numbers go to Advanced. */
function renderSelf({ self_state: s, drives }) {
  $("self-mood").textContent = s ? moodWords(people.companion, s) : "I have not reflected yet.";
  $("self-mood").classList.toggle("muted", !s);
  $("self-narrative").textContent = (s && s.self_narrative) || "";
  $("self-narrative").hidden = !(s && s.self_narrative);
  const reflections = (s && s.reflections) || [];
  $("reflections").replaceChildren(fragment(reflections.map((r, i) => el("li", {}, r, el("button", {
    class: "icon-button", text: "✕", "aria-label": `Delete the reflection “${r}”`, onclick: async () => {
      try { await api("/api/self", { method: "PATCH", body: { reflections: reflections.filter((_, j) => j !== i) } }); loadMemory(); }
      catch (e) { showError(e.message); } } })))));
  gauges($("drives"), drives);
  $("self-energy").textContent = s && Number.isFinite(Number(s.energy)) ? `Energy ${Number(s.energy).toFixed(2)}, mood “${s.mood}”.` : "";
}

function moodWords(name, s) {
  const mood = String(s.mood || "").trim().replace(/[.!]+$/, "");
  const energy = Number(s.energy);
  const how = !Number.isFinite(energy) ? "" : energy < 0.34 ? ", and low on energy" : energy > 0.66 ? ", and full of energy" : "";
  if (!mood) return `${name} has not said how it feels${how}.`;
  // a mood is a word or two ("calm", "quietly curious"); one the model wrote as a sentence is shown as it is
  return mood.split(/\s+/).length <= 3 ? `${name} feels ${mood.toLowerCase()}${how}.` : `${mood}.`;
}

function renderProposals(proposals) {
  $("world-proposals").replaceChildren(fragment(proposals.map((p) => {
    const decide = (how) => async () => {
      try { await api(`/api/world/proposals/${p.id}/${how}`, { method: "POST", body: { by: "user" } }); loadMemory(); }
      catch (e) { showError(e.message); }
    };
    return el("li", { class: "proposal" },
      el("p", {}, el("strong", { text: `Proposed by ${p.author}` }), el("span", { class: "muted", text: ` — ${p.reason || ""}` })),
      el("pre", { text: p.content }),
      el("div", { class: "row" }, el("button", { text: "Accept", onclick: decide("accept") }),
         el("button", { text: "Reject", onclick: decide("reject") })));
  })));
}

/* The timeline: a fold per month, newest first, with days as a person says them. The server folds it
 * (memory/folded_timeline.py): a period with one child is that child, each text is there once, and a month
 * is labelled by the days (and weeks) that had talk. */
function renderTimeline(months) {
  const box = $("timeline");
  if (box.querySelector("[data-editing]")) return;  // a refresh waits until the person's edit ends
  const opened = new Set([...box.querySelectorAll("details[open]")].map((d) => d.dataset.month));
  box.replaceChildren(fragment(months.map(({ month, count, entries }) =>
    el("details", { class: "month", "data-month": month, open: opened.has(month) },
      el("summary", {}, el("span", { text: D.periodLabel(month) }), count ? el("span", { class: "muted", text: ` · ${count}` }) : null),
      el("ol", { class: "plain" }, fragment(entries.map(timelineItem)))))));
  if (!months.length) box.append(el("p", { class: "muted", text: "Empty so far." }));
}

function timelineItem(d) {
  const when = D.periodLabel(d.period);
  const body = el("div", { class: "memory-item" });
  memoryItem(body, { kind: "digest", id: d.id, text: d.content, method: d.method,
    label: d.granularity === "week" ? `the ${when}` : `the ${d.granularity} ${when}`, path: `/api/digests/${d.id}` });
  return el("li", { class: d.granularity }, el("time", { datetime: D.periodStart(d.period), text: when }), body);
}

registerPanel("memory", { title: "Memory", open: loadMemory });

export function wireMemoryPanel() {
  const refresh = () => { if (isShown("memory")) loadMemory(); };
  for (const name of ["memory-changed", "turn-finished", "conversation-opened"]) on(name, refresh);
  wireFactForm();
  wireHouseholdMemory();
  $("world-save").addEventListener("click", async () => {
    try {
      const content = $("world-input").value;
      await api("/api/world", { method: "PUT", body: { content } });
      saved($("world-input"), content);
      $("world-status").textContent = "Saved.";
      setTimeout(() => { $("world-status").textContent = ""; }, 2500);
    } catch (e) { showError(e.message); }
  });
}
