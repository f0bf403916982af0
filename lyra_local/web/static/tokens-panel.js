/* API tokens (each person's own): for the OpenAI route, `lyra mcp` and scripts, each acting as this person.
 * A new token's secret is shown once, with Copy (the server keeps only its hash); a revoked one is refused. */
import { api } from "./api.js";
import { $, copyText, el, fragment } from "./dom.js";
import { confirmForget } from "./feedback.js";
import { registerPanel } from "./panels.js";

const D = window.LyraDates;

async function loadTokens() {
  try {
    const { tokens } = await api("/api/tokens");
    $("token-list").replaceChildren(fragment(tokens.map(tokenItem)));
    if (!tokens.length) $("token-list").append(el("li", { class: "muted", text: "No API token yet." }));
  } catch (e) { say(e.message, true); }
}

function say(message, failed = false) {
  $("tokens-status").textContent = message;
  $("tokens-status").classList.toggle("danger-link", failed);
}

function tokenItem(t) {
  const used = t.last_used_at ? `last used ${D.momentLabel(t.last_used_at)}` : "never used";
  return el("li", { class: "token", "data-token": t.id },
    el("div", { class: "person-head" }, el("strong", { text: t.name }),
       el("span", { class: "muted small", text: `created ${D.dayLabel(t.created_at)} · ${used}` })),
    el("div", { class: "row person-actions" }, el("button", { class: "link danger-link", text: "Revoke",
      "aria-label": `Revoke the token ${t.name}`, onclick: () => revoke(t) })));
}

async function revoke(t) {
  if (!await confirmForget(`Revoke “${t.name}”?`, "Whatever uses this token is refused from now on.", "Revoke it")) {
    return;
  }
  try {
    await api(`/api/tokens/${t.id}`, { method: "DELETE" });
    say(`“${t.name}” was revoked.`);
    loadTokens();
  } catch (e) { say(e.message, true); }
}

/* The new token's secret, once: it cannot be shown again. */
function showSecret(token, secret) {
  const copied = el("span", { class: "muted small", role: "status" });
  $("token-secret").replaceChildren(
    el("p", {}, el("strong", { text: `“${token.name}” created. ` }),
       "Copy its secret now: it is not shown again. Use it as a Bearer token (Authorization: Bearer …)."),
    el("code", { class: "token-secret", id: "token-secret-value", text: secret }),
    el("div", { class: "row" },
       el("button", { text: "Copy", onclick: () => copyText(secret).then(() => { copied.textContent = "Copied."; },
         () => { copied.textContent = "Copying failed: select the secret and copy it."; }) }),
       el("button", { text: "Done", onclick: () => { $("token-secret").replaceChildren(); $("token-secret").hidden = true; } }),
       copied));
  $("token-secret").hidden = false;
}

registerPanel("tokens", { title: "API tokens", open: loadTokens, close: () => {
  $("token-secret").replaceChildren();  // a secret left on screen goes when the page is closed
  $("token-secret").hidden = true;
} });

export function wireTokensPanel() {
  $("token-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const { token, secret } = await api("/api/tokens", { method: "POST", body: { name: $("token-name").value.trim() } });
      $("token-form").reset();
      say("");
      showSecret(token, secret);
      loadTokens();
    } catch (err) { say(err.message, true); }
  });
}
