/* Search: what I remember, by meaning and by words; each result dated by the days it speaks of, saying how it
 * was found (by words: the matched words marked; by date; by meaning: close, no word in common; the reply to a
 * match), Open (a link) under it and Forget away from it. Only what matches is shown, so a word nobody said
 * (or one forgotten) finds nothing. */
import { api } from "./api.js";
import { emit } from "./bus.js";
import { currentId, people } from "./conversation.js";
import { $, el, excerpt, fragment, openLink } from "./dom.js";
import { confirmForget, showError } from "./feedback.js";
import { photoCaption } from "./messages.js";
import { registerPanel } from "./panels.js";

const D = window.LyraDates;
const TIER_NAMES = {};  // the kinds of memory as a person reads them, from the store's registry (GET /api/kinds)

export async function loadKinds() {
  const { kinds } = await api("/api/kinds");
  const searchable = kinds.filter((k) => k.searchable);
  for (const k of kinds) TIER_NAMES[k.name] = k.label;
  const capital = (text) => text.charAt(0).toUpperCase() + text.slice(1);
  $("search-tier").replaceChildren(el("option", { value: "", text: "Everything" }),
    fragment(searchable.map((k) => el("option", { value: k.name, text: capital(k.plural) }))));
}

async function runSearch() {
  const q = $("search-input").value.trim();
  if (!q) return;
  const params = new URLSearchParams({ q });
  if ($("search-tier").value) params.set("tier", $("search-tier").value);
  if ($("search-since").value) params.set("since", $("search-since").value);
  if ($("search-until").value) params.set("until", nextDay($("search-until").value));  // "until" includes that day
  if ($("search-here").checked && currentId()) params.set("session_id", currentId());
  if (currentId()) params.set("current_session_id", currentId());  // what was just said there ranks last
  params.set("order", $("search-order").value);
  $("search-status").textContent = "Searching…";
  try {
    const { results } = await api(`/api/search?${params}`);
    $("search-status").replaceChildren(...(results.length ? [`${results.length} found.`] : nothingFound()));
    $("search-results").replaceChildren(fragment(results.map(searchResult)));
  } catch (e) { $("search-status").textContent = ""; showError(e.message); }
}

/* Nothing matched: said plainly. */
function nothingFound() {
  return ["Nothing found.", el("span", { class: "muted search-hint",
    text: " Nothing in your conversations or memories has these words or is close in meaning." })];
}

/* Who said a turn: the person, the companion, or the assistant an imported reply came from ("ChatGPT"). */
function whoSaid(r) {
  if (r.tier !== "exchange") return null;
  const who = r.role === "user" ? people.user : r.author || people.companion;
  return el("span", { class: "badge who", text: who, title: `Said by ${who}` });
}

/* How a result was found, in words (memory/search.py `matches`): a word of the search is in it (marked), it
 * was said on the day the search names, it is close in meaning with no word in common, or it was said right
 * after one that matched. */
const FOUND_BY = {
  words: ["found by words", "The marked words are in it"],
  date: ["found by date", "Said on the day your search names"],
  meaning: ["found by meaning", "No word in common: close in meaning"],
  reply: ["the reply to a match", "Said right after a message that matched"],
};

function foundBy(r) {
  const [text, title] = FOUND_BY[r.matched] || FOUND_BY.words;
  return el("span", { class: `badge found-by ${r.matched}`, text, title });
}

function nextDay(day) {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + 1);
  return d.toISOString().slice(0, 10);
}

function searchResult(r) {
  const kind = TIER_NAMES[r.tier] || r.tier;
  const text = r.content || (r.caption ? `a photo: ${r.caption}` : "");
  const label = `the ${kind} “${excerpt(text, 40)}”`;
  const open = r.session_id ? openLink(r.session_id, r.turn_id, "Open", `Open ${r.session_name} at ${label}`) : null;
  const forget = el("button", { class: "link-button danger-link forget", text: "Forget", "aria-label": `Forget ${label}`,
    onclick: async () => {
      const also = r.tier === "exchange"
        ? " Its other versions, any branch that went on from them and, for a message of yours, Lyra's reply to it go too."
        : "";
      if (!await confirmForget(`Forget this ${kind}?`,
                               `“${excerpt(text, 200)}” is forgotten, with what was built from it.${also}`)) return;
      try {
        await forgetResult(r);
        await runSearch();
        if (r.session_id) emit("conversation-changed", r.session_id);
      } catch (e) { showError(e.message); }
    } });
  const pieces = r.snippet && r.snippet.length ? r.snippet : [{ text: r.content, match: false }];
  return el("li", { class: "result", "data-tier": r.tier, "data-matched": r.matched },
    el("div", { class: "result-head" }, whoSaid(r) || el("span", { class: "badge", text: kind }), resultDate(r), foundBy(r),
       forget),
    r.content ? el("p", { class: "snippet" }, fragment(pieces.map((p) => (p.match ? el("mark", { text: p.text }) : p.text))))
      : null,
    r.caption ? photoCaption(r.caption_snippet && r.caption_snippet.length ? r.caption_snippet
      : [{ text: r.caption, match: false }]) : null,
    el("div", { class: "result-foot" }, open, r.session_name ? el("span", { class: "muted", text: r.session_name }) : null));
}

/* The days a result speaks of: a digest's period, a summary's first to last turn, a turn's or a fact's day. */
function resultDate(r) {
  const began = r.began_at || r.created_at;
  const [datetime, text] = r.period ? [D.periodStart(r.period), D.periodLabel(r.period)]
    : [began, r.tier === "gist" ? D.spanLabel(began, r.ended_at) : D.dayLabel(began)];
  return el("time", { class: "badge date", datetime, text });
}

/* The same forget as everywhere else: a turn with what was built from it; a derived memory as its panel does. */
function forgetResult(r) {
  if (r.tier === "exchange") return api("/api/forget", { method: "POST", body: { exchange_ids: [r.id] } });
  if (r.tier === "gist") return api(`/api/sessions/${r.session_id}/gist`, { method: "DELETE" });
  if (r.tier === "digest") return api(`/api/digests/${r.id}`, { method: "DELETE" });
  return api("/api/forget", { method: "POST", body: { memories: { fact: [r.id] } } });  // its history too
}

registerPanel("search", { title: "Search", open: () => $("search-input").focus() });

export function wireSearchPanel() {
  $("search-form").addEventListener("submit", (e) => { e.preventDefault(); runSearch(); });
  $("search-order").addEventListener("change", () => { if ($("search-input").value.trim()) runSearch(); });
}
