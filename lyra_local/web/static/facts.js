/* "About you": a card per fact, to confirm (the dream never changes it then), reject or edit; facts learnt
 * since the person last looked are marked new until the page reloads. */
import { api } from "./api.js";
import { emit } from "./bus.js";
import { $, el, fragment, openLink } from "./dom.js";
import { showError } from "./feedback.js";
import { sourcesToggle } from "./memory-items.js";

const D = window.LyraDates;
const newFacts = new Set();

export function renderProfile(facts) {
  const list = $("profile");
  if (list.querySelector("[data-editing]")) return;  // a refresh waits until the person's edit ends
  const learnt = facts.filter((f) => f.new);
  for (const f of learnt) newFacts.add(f.id);
  list.replaceChildren(fragment(facts.map(factCard)));
  if (!facts.length) list.append(el("li", { class: "muted", text: "Nothing yet." }));
  // shown now: the server stops calling them new, and this page keeps its badges until it reloads
  if (learnt.length) api("/api/profile/seen", { method: "POST" }).catch((e) => showError(e.message));
}

function factCard(f) {
  const card = el("li", { class: "fact-card", "data-key": f.key, "data-id": f.id });
  const act = (how) => async () => {
    try { await api(`/api/profile/facts/${f.id}/${how}`, { method: "POST" }); emit("memory-changed"); }
    catch (e) { showError(e.message); }
  };
  const value = el("p", { class: "fact-value", text: f.value });
  const right = f.confirmed ? null : el("button", { text: "That's right",
    "aria-label": `That's right: ${f.key} is ${f.value}`, onclick: act("confirm") });
  const wrong = el("button", { text: "That's wrong", "aria-label": `That's wrong: ${f.key} is not ${f.value}`,
                               onclick: act("reject") });
  const edit = el("button", { text: "Edit", "aria-label": `Edit ${f.key}`, onclick: () => editFact(card, f, value) });
  const [sources, list] = sourcesToggle("fact", f.id, f.key);
  card.append(
    el("div", { class: "fact-head" }, el("span", { class: "fact-key", text: f.key }),
       newFacts.has(f.id) ? el("span", { class: "badge new", text: "new" }) : null,
       f.confirmed ? el("span", { class: "badge", text: "confirmed" }) : null),
    value, factPlanned(f), factSaid(f), el("div", { class: "row fact-actions" }, right, wrong, edit, sources), list);
  if (f.plan_past) card.classList.add("past");
  return card;
}

/* When a plan was for, and that the day has gone by: a move "in September" said two years ago is no plan now. */
function factPlanned(f) {
  if (!f.planned_for) return null;
  return el("p", { class: "fact-planned muted", text: f.plan_past ? `Planned for ${f.planned_for} · that date has passed`
                                                                    : `Planned for ${f.planned_for}` });
}

/* When and where a fact was said: its turn's day and conversation, a link that opens it there. */
function factSaid(f) {
  const said = f.said;
  if (said && said.session_id) {
    return el("p", { class: "fact-said muted" }, "Said ",
      el("time", { datetime: said.created_at, text: D.dayLabel(said.created_at) }), " in ",
      openLink(said.session_id, said.turn_id, said.session_name, `Open ${said.session_name} where ${f.key} was said`));
  }
  const when = f.observed_at || f.created_at;
  const who = f.author === "user" ? "You told me" : "Learnt";
  return el("p", { class: "fact-said muted" }, `${who} `, el("time", { datetime: when, text: D.dayLabel(when) }));
}

function editFact(card, f, value) {
  const input = el("input", { value: f.value, "aria-label": `Value of ${f.key}`, maxlength: "500" });
  const done = () => { delete card.dataset.editing; emit("memory-changed"); };
  const save = el("button", { class: "primary", text: "Save", onclick: async () => {
    try { await api("/api/profile", { method: "PUT", body: { key: f.key, value: input.value } }); }
    catch (e) { showError(e.message); return; }
    done();
  } });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); save.click(); }
    if (e.key === "Escape") { e.preventDefault(); done(); }
  });
  card.dataset.editing = "1";
  value.replaceWith(el("div", { class: "row" }, input, save, el("button", { text: "Cancel", onclick: done })));
  input.focus();
}

/* The form that adds a fact in the person's own words. */
export function wireFactForm() {
  $("fact-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await api("/api/profile", { method: "PUT", body: { key: $("fact-key").value, value: $("fact-value").value } });
      $("fact-key").value = $("fact-value").value = "";
      emit("memory-changed");
    } catch (err) { showError(err.message); }
  });
}
