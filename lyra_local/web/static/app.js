/* Lyra's web UI: sessions, streamed chat, the memory, the dream cycle, settings.
 * Plain JS, no build step. Every string from the server goes into the page as
 * text (textContent) or through LyraMarkdown, never as HTML. */
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const el = (tag, props = {}, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(props)) {
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v === true ? "" : v);
    }
    node.append(fragment(children));
    return node;
  };
  // Nodes (or strings; null and undefined left out) as one fragment, appended one by one: spreading a list
  // from the server into one call (`replaceChildren(...list)`) overflows the stack at about 100,000 items.
  const fragment = (nodes) => {
    const out = document.createDocumentFragment();
    for (const node of nodes) if (node !== null && node !== undefined) out.append(node);
    return out;
  };

  // Graphemes (an emoji, a flag, a letter with its accents) where the browser can tell them, else code points.
  const GRAPHEMES = typeof Intl === "object" && Intl.Segmenter ? new Intl.Segmenter(undefined, { granularity: "grapheme" }) : null;

  /* The start of a person's ``text``: at most ``count`` characters as a person sees them and ``units`` UTF-16
   * code units, never half of one. ``slice`` cuts by code units, so a cut could end in half of an emoji's
   * surrogate pair: a conversation named so was refused by the server, and its first message lost. */
  function clip(text, count, units = Infinity) {
    let out = "";
    let n = 0;
    for (const piece of GRAPHEMES ? GRAPHEMES.segment(text) : text) {  // a string iterates by code point
      const next = GRAPHEMES ? piece.segment : piece;
      if (n++ === count || out.length + next.length > units) break;
      out += next;
    }
    return out;
  }

  const state = { sessions: [], current: null, streaming: null, panel: null, logAbort: null, lastEvent: null,
                  dreaming: false, user: "You", companion: "Lyra", memoryLoads: 0, opening: null,
                  newFacts: new Set() };  // facts learnt since the person last looked, marked until the page reloads
  const D = window.LyraDates;

  // -- HTTP ----------------------------------------------------------------------------------

  function headers(extra = {}) {
    const token = localStorage.getItem("lyra-token");
    return token ? { ...extra, Authorization: `Bearer ${token}` } : extra;
  }

  async function api(path, options = {}) {
    const init = { ...options, headers: headers(options.body ? { "Content-Type": "application/json" } : {}) };
    if (options.body && typeof options.body !== "string") init.body = JSON.stringify(options.body);
    const resp = await fetch(path, init);
    if (resp.status === 401 && await askToken()) return api(path, options);
    const type = resp.headers.get("content-type") || "";
    const data = type.includes("json") ? await resp.json() : type.startsWith("text/plain") ? await resp.text() : null;
    if (!resp.ok) throw new Error(describe(data, resp));
    return data;
  }

  function describe(data, resp) {
    const err = data && (data.error || data.detail);
    if (err && err.message) return err.hint ? `${err.message} — ${err.hint}` : err.message;
    if (Array.isArray(err)) return err.map((e) => e.msg).join("; ");
    return `${resp.status} ${resp.statusText}`;
  }

  /* Server-sent events over fetch (EventSource cannot send the API token). */
  async function sse(path, init, onEvent) {
    const resp = await fetch(path, { ...init, headers: headers(init.body ? { "Content-Type": "application/json" } : {}) });
    if (resp.status === 401 && await askToken()) return sse(path, init, onEvent);
    if (!resp.ok) throw new Error(describe(await resp.json().catch(() => null), resp));
    const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let cut;
      while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
        let event = "message";
        const data = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
        }
        if (data.length) onEvent(event, JSON.parse(data.join("\n")));
      }
    }
  }

  function askToken() {
    const dialog = $("token-dialog");
    return new Promise((resolve) => {
      dialog.addEventListener("close", () => {
        const token = $("token-input").value.trim();
        if (token) localStorage.setItem("lyra-token", token);
        resolve(Boolean(token));
      }, { once: true });
      dialog.showModal();
    });
  }

  function showError(message) {
    const box = $("error");
    box.replaceChildren(el("span", { text: message }), el("button", {
      class: "icon-button", "aria-label": "Dismiss", text: "✕", onclick: () => { box.hidden = true; } }));
    box.hidden = !message;
  }

  function showNotice(message) {
    $("notice").textContent = message;
    $("notice").hidden = !message;
  }

  // -- sessions --------------------------------------------------------------------------------

  async function loadSessions() {
    state.sessions = (await api("/api/sessions")).sessions;
    renderSessions();
  }

  function renderSessions() {
    const list = $("session-list");
    // A rename in progress keeps its field: it re-renders the list itself when it ends.
    if (list.querySelector("li[data-renaming]")) return;
    list.replaceChildren(fragment(state.sessions.map((s) => {
      const name = el("button", { class: "session-name", title: s.name,
                                  "aria-current": s.id === state.current ? "true" : null,
                                  onclick: () => selectSession(s.id) }, s.name,
                      s.remember === false ? el("span", { class: "badge off", text: "off the record" }) : null);
      const rename = el("button", { class: "icon-button", "aria-label": `Rename ${s.name}`, text: "✎",
                                    onclick: () => startRename(item, s) });
      const remove = el("button", { class: "icon-button", "aria-label": `Delete ${s.name}`, text: "✕",
                                    onclick: () => confirmDelete(s) });
      const item = el("li", { class: s.id === state.current ? "active" : "", "data-id": s.id }, name,
                      el("span", { class: "session-actions" }, rename, remove));
      return item;
    })));
  }

  function startRename(item, session) {
    const input = el("input", { value: session.name, "aria-label": "New name", maxlength: "200" });
    let done = false;
    const finish = async (save) => {
      if (done) return;
      done = true;
      delete item.dataset.renaming;
      if (save && input.value.trim() && input.value.trim() !== session.name) {
        try { await api(`/api/sessions/${session.id}`, { method: "PATCH", body: { name: input.value.trim() } }); }
        catch (e) { showError(e.message); }
      }
      await loadSessions();
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); finish(true); }
      if (e.key === "Escape") { e.preventDefault(); finish(false); }
    });
    input.addEventListener("blur", () => finish(true));
    item.dataset.renaming = "1";
    item.replaceChildren(input);
    input.focus();
    input.select();
  }

  /* Asks before forgetting anything; resolves true when the person says "Forget it". */
  function confirmForget(title, text) {
    const dialog = $("confirm-dialog");
    $("confirm-title").textContent = title;
    $("confirm-text").textContent = text;
    dialog.returnValue = "";
    dialog.showModal();
    return new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"),
                                                            { once: true }));
  }

  async function confirmDelete(session) {
    const what = session.remember === false ? "Nothing of it was remembered." : "It is deleted with everything remembered from it.";
    if (!await confirmForget("Forget this conversation?", `“${session.name}”: ${what}`)) return;
    try {
      await api(`/api/sessions/${session.id}`, { method: "DELETE" });
      if (state.current === session.id) { state.current = null; renderMessages([]); showOffRecord(); }
      await loadSessions();
    } catch (e) { showError(e.message); }
  }

  /* Leaving an off-the-record conversation deletes it (the banner says so while it is open). */
  async function leaveCurrent(nextId) {
    const leaving = state.sessions.find((s) => s.id === state.current);
    if (!leaving || leaving.remember !== false || leaving.id === nextId) return;
    if (state.streaming) {  // its reply stops first, so nothing of it is written after it is deleted
      state.streaming.abort();
      for (let i = 0; i < 100 && state.streaming; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    try {
      await api(`/api/sessions/${leaving.id}`, { method: "DELETE" });
      state.sessions = state.sessions.filter((s) => s.id !== leaving.id);
    } catch (e) { showError(e.message); }
  }

  function showOffRecord() {
    const session = state.sessions.find((s) => s.id === state.current);
    const off = Boolean(session && session.remember === false);
    $("off-record-banner").hidden = !off;
    document.body.classList.toggle("off-record-mode", off);
  }

  async function selectSession(id, turnId) {
    await leaveCurrent(id);
    state.current = id;
    renderSessions();
    showOffRecord();
    closeSessionsOnNarrow();
    try { await reloadMessages(); } catch (e) { showError(e.message); }
    if (state.current !== id) return;  // another conversation was opened while this one loaded
    if (state.panel === "memory") loadMemory();
    const turn = turnId ? document.querySelector(`#messages li[data-id="${Number(turnId)}"]`) : null;
    if (turn) {  // opened from a memory's sources: show that turn
      turn.classList.add("highlight");
      turn.setAttribute("tabindex", "-1");
      turn.scrollIntoView({ block: "center" });
      turn.focus();
    } else {
      $("composer-input").focus();
    }
  }

  // -- memory: sources, edits, deletions ----------------------------------------------------------

  function sourcesToggle(kind, id, label) {
    const list = el("ol", { class: "sources plain", hidden: true });
    const button = el("button", { class: "link", "aria-expanded": "false", text: "Sources",
      "aria-label": `Sources of ${label}`, onclick: async () => {
        const open = button.getAttribute("aria-expanded") !== "true";
        button.setAttribute("aria-expanded", String(open));
        list.hidden = !open;
        if (!open || list.childElementCount) return;
        try {
          const found = await api(`/api/sources/${kind}/${id}`);
          list.replaceChildren(fragment(found.turns.map((t) => el("li", {},
            el("time", { class: "badge date", datetime: t.created_at, text: `${D.dayLabel(t.created_at)} · ${t.session_name}` }),
            " ", openLink(t.session_id, t.id, "Open", `Open ${t.session_name} at this turn`),
            el("p", { text: t.content })))));
          if (!found.turns.length) list.append(el("li", { class: "muted", text: "Its sources were forgotten." }));
          if (found.total > found.turns.length) list.append(el("li", { class: "muted", text: `(${found.total} turns in all)` }));
        } catch (e) { showError(e.message); }
      } });
    return [button, list];
  }

  // A derived memory the person can read through (sources), correct (edit) and delete.
  function memoryItem(container, { kind, id, text, method, label, path, emptyText }) {
    // A refresh (a reply finished, another conversation opened) leaves alone what the person is editing.
    if (container.dataset.editing && container.dataset.editing === String(id)) return;
    delete container.dataset.editing;
    if (!text) { container.replaceChildren(el("p", { class: "muted", text: emptyText })); return; }
    const [body, more] = clamped(text);
    const mine = method === "user" ? el("span", { class: "badge", text: "your words" }) :
      method === "extractive" ? el("span", { class: "badge", text: "as said" }) : null;
    const editButton = el("button", { class: "link", text: "Edit", "aria-label": `Edit ${label}`, onclick: () => {
      const area = el("textarea", { rows: "4", "aria-label": `${label}, your version` });
      area.value = text;
      const save = el("button", { text: "Save", onclick: async () => {
        try { await api(path, { method: "PUT", body: { content: area.value } }); }
        catch (e) { showError(e.message); return; }
        delete container.dataset.editing;
        loadMemory();
      } });
      const cancel = el("button", { text: "Cancel", onclick: () => { delete container.dataset.editing; loadMemory(); } });
      container.dataset.editing = String(id);
      container.replaceChildren(area, el("div", { class: "row" }, save, cancel));
      area.focus();
    } });
    const deleteButton = el("button", { class: "link", text: "Delete", "aria-label": `Delete ${label}`,
      onclick: async () => {
        if (!window.confirm(`Delete ${label}? It is not written again until what it was built from changes.`)) return;
        try { await api(path, { method: "DELETE" }); loadMemory(); } catch (e) { showError(e.message); }
      } });
    const [toggle, list] = sourcesToggle(kind, id, label);
    container.replaceChildren(body, el("div", { class: "row" }, more, mine, toggle, editButton, deleteButton), list);
  }

  const CLAMP_CHARS = 140;  // about three lines of the panel: a longer text shows them, and "more" opens it whole

  /* A text as a paragraph of a few lines, and the "more" button that opens it (null for a short text). */
  function clamped(text) {
    const body = el("p", { class: text.length > CLAMP_CHARS ? "clamp" : null, text });
    if (text.length <= CLAMP_CHARS) return [body, null];
    const more = el("button", { class: "link more", "aria-expanded": "false", text: "more", onclick: () => {
      const open = more.getAttribute("aria-expanded") !== "true";
      more.setAttribute("aria-expanded", String(open));
      more.textContent = open ? "less" : "more";
      body.classList.toggle("clamp", !open);
    } });
    return [body, more];
  }

  // -- links that open a conversation at a turn (#session=3&turn=55): real links, a new tab works too ---------

  function openLink(sessionId, turnId, text, label) {
    const where = new URLSearchParams({ session: String(sessionId) });
    if (turnId) where.set("turn", String(turnId));
    return el("a", { class: "open-link", href: `#${where}`, text, "aria-label": label });
  }

  /* Opens the conversation the address names, then clears it, so that the same link opens it again. */
  async function openFromHash() {
    const where = new URLSearchParams(location.hash.slice(1));
    const id = Number(where.get("session"));
    if (!id) return false;
    history.replaceState(null, "", location.pathname + location.search);
    await selectSession(id, Number(where.get("turn")) || undefined);
    return true;
  }

  /* A message sent while a new conversation is being opened waits for it (else it would go to the old one). */
  function newSession(name, remember = true) {
    const opening = (async () => {
      await leaveCurrent(null);
      const body = { ...(name ? { name } : {}), ...(remember ? {} : { remember: false }) };
      const session = await api("/api/sessions", { method: "POST", body });
      state.sessions.unshift(session);
      state.current = session.id;
      renderSessions();
      renderMessages([]);
      showOffRecord();
      return session;
    })();
    state.opening = opening;
    const done = () => { if (state.opening === opening) state.opening = null; };
    opening.then(done, done);
    return opening;
  }

  // -- messages ---------------------------------------------------------------------------------

  function renderMessages(messages) {
    $("messages").replaceChildren(fragment(messages.map((m) => messageItem(m.role, m.content, m.id, m))));
    $("empty").hidden = messages.length > 0;
    scrollDown();
  }

  function messageItem(role, content, id, versions) {
    const body = el("div", { class: "bubble" });
    const who = role === "assistant" ? state.companion : state.user;
    const item = el("li", { class: `message ${role}`, "data-id": id ?? "" },
                    el("span", { class: "who", text: who }), body);
    item.content = content;  // as stored (an edit starts from it)
    setContent(item, content);
    if (id) item.append(messageTools(item, role, id, versions));
    return item;
  }

  /* Under a message: its versions (‹ 2/3 ›), and Regenerate (a reply) or Edit (the person's message); Why? */
  function messageTools(item, role, id, versions) {
    const tools = el("div", { class: "message-tools" });
    const ids = (versions && versions.versions) || [id];
    if (ids.length > 1) {
      const at = ids.indexOf(id);
      const what = role === "assistant" ? "reply" : "version of this message";
      const go = (to) => () => chooseVersion(ids[to]);
      tools.append(el("span", { class: "pager", role: "group", "aria-label": `Versions of this ${role === "assistant" ? "reply" : "message"}` },
        el("button", { class: "icon-button", "aria-label": `Previous ${what}`, text: "‹", disabled: at <= 0, onclick: go(at - 1) }),
        el("span", { class: "pager-count", text: `${at + 1}/${ids.length}`, "aria-label": `${at + 1} of ${ids.length}` }),
        el("button", { class: "icon-button", "aria-label": `Next ${what}`, text: "›", disabled: at >= ids.length - 1, onclick: go(at + 1) })));
    }
    if (role === "assistant") {
      tools.append(el("button", { class: "link-button", text: "Regenerate", "aria-label": "Regenerate this reply",
                                  onclick: () => regenerate(item, id) }));
      tools.append(whyToggle(id));
    } else {
      tools.append(el("button", { class: "link-button", text: "Edit", "aria-label": "Edit this message",
                                  onclick: () => startEdit(item, id) }));
    }
    return tools;
  }

  async function settleAfterStop(sessionId, replied, tries = 10) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (state.current !== sessionId || state.streaming) return;
    try {
      const { messages } = await api(`/api/sessions/${sessionId}/messages`);
      const stored = messages.length && messages[messages.length - 1].role === "assistant";
      if (state.current !== sessionId || state.streaming) return;
      if (stored || !replied || tries <= 1) renderMessages(messages);
      else settleAfterStop(sessionId, replied, tries - 1);
    } catch (e) { showError(e.message); }
  }

  /* The current conversation as stored; dropped if another was opened while it loaded. */
  async function reloadMessages() {
    if (!state.current) return;
    const id = state.current;
    const { messages } = await api(`/api/sessions/${id}/messages`);
    if (state.current === id) renderMessages(messages);
  }

  async function chooseVersion(turnId) {
    if (state.streaming) return;
    try {
      const { session_id, messages } = await api(`/api/exchanges/${turnId}/choose`, { method: "POST" });
      if (state.current === session_id) renderMessages(messages);
      const kept = document.querySelector(`#messages li[data-id="${Number(turnId)}"] .pager button:not([disabled])`);
      if (kept) kept.focus();
      if (state.panel === "memory") loadMemory();
    } catch (e) { showError(e.message); }
  }

  function startEdit(item, id) {
    if (state.streaming) return;
    const old = item.content;
    const area = el("textarea", { rows: "3", "aria-label": "Your message, edited" });
    area.value = old;
    const save = el("button", { class: "primary", text: "Send", onclick: () => {
      if (!area.value.trim() || area.value === old) { reloadMessages(); return; }
      editMessage(item, id, area.value);
    } });
    const cancel = el("button", { text: "Cancel", onclick: () => reloadMessages() });
    area.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); save.click(); }
      if (e.key === "Escape") { e.preventDefault(); cancel.click(); }
    });
    item.querySelector(".message-tools").replaceChildren(el("div", { class: "edit-box" }, area,
      el("div", { class: "row end" }, cancel, save)));
    item.querySelector(".bubble").hidden = true;
    area.focus();
  }

  /* An edited message: what followed it leaves the page (it is kept as a branch) and a new reply streams. */
  async function editMessage(item, id, text) {
    if (state.streaming) return;
    while (item.nextElementSibling) item.nextElementSibling.remove();
    const userItem = messageItem("user", text);
    item.replaceWith(userItem);
    await streamReply(`/api/exchanges/${id}/edit`, { content: text }, userItem);
  }

  async function regenerate(item, id) {
    if (state.streaming) return;
    while (item.nextElementSibling) item.nextElementSibling.remove();
    const userItem = item.previousElementSibling;
    item.remove();
    await streamReply(`/api/exchanges/${id}/regenerate`, null, userItem);
  }

  function setContent(item, text) {
    const body = item.querySelector(".bubble");
    if (item.classList.contains("assistant")) body.replaceChildren(window.LyraMarkdown.render(text));
    else {  // a line each, in a loop: a message may hold 200,000 newlines
      const lines = document.createDocumentFragment();
      text.split("\n").forEach((line, i) => {
        if (i) lines.append(document.createElement("br"));
        lines.append(line);
      });
      body.replaceChildren(lines);
    }
  }

  function whyToggle(id) {
    const box = el("div", { class: "why", hidden: true, id: `why-${id}` });
    const button = el("button", { class: "link-button", "aria-expanded": "false", "aria-controls": `why-${id}`,
                                  text: "Why?" });
    button.addEventListener("click", async () => {
      const open = button.getAttribute("aria-expanded") !== "true";
      button.setAttribute("aria-expanded", String(open));
      box.hidden = !open;
      if (open && !box.childElementCount) {
        try {
          const trace = await api(`/api/exchanges/${id}/trace`);
          const memories = trace.memories.filter((m) => m.layer !== "recent");
          box.append(el("p", { class: "muted", text: `${trace.context_tokens} tokens of context; ` +
            (memories.length ? "memories it used:" : "no memories beyond this conversation.") }));
          box.append(el("ul", { class: "plain" }, fragment(memories.map((m) => el("li", {},
            el("span", { class: "badge", text: `${m.layer} · ${m.stage || m.kind}` }),
            m.created_at ? el("span", { class: "badge date", text: [m.created_at.slice(0, 10), m.session_name].filter(Boolean).join(" · ") }) : null,
            el("span", m.forgotten ? { class: "muted", text: " (forgotten)" } : m.set_aside
              ? { class: "muted", text: " (a version not chosen now)" } : { text: " " + clip(m.content, 300) }),
            !m.forgotten && !m.set_aside && m.session_id ? el("button", { class: "link-button", text: "Open",
              "aria-label": `Open ${m.session_name || "the conversation"} at this memory`,
              onclick: () => selectSession(m.session_id, m.kind === "exchange" ? m.id : undefined) }) : null)))));
        } catch (e) { box.append(el("p", { class: "muted", text: e.message })); }
      }
    });
    return el("div", { class: "why-wrap" }, button, box);
  }

  function scrollDown() {
    const list = $("messages");
    list.scrollTop = list.scrollHeight;
  }

  async function send(text) {
    if (!text.trim() || state.streaming) return;
    showError("");
    showNotice("");
    if (state.opening) await state.opening.catch(() => {});
    let sessionId = state.current;
    try {
      if (!sessionId) sessionId = (await newSession(clip(text.trim(), 48, 200))).id;  // the server takes 200 at most
    } catch (e) { showError(e.message); return; }
    const userItem = messageItem("user", text);
    $("messages").append(userItem);
    await streamReply(`/api/sessions/${sessionId}/chat`, { message: text }, userItem);
  }

  /* Streams a reply (a turn, a regenerated reply, the reply to an edited message) under ``userItem``, then
   * shows the conversation as the server has it (with each turn's versions). */
  async function streamReply(path, body, userItem) {
    const reply = messageItem("assistant", "");
    reply.classList.add("streaming");
    $("messages").append(reply);
    $("empty").hidden = true;
    scrollDown();
    const controller = new AbortController();
    state.streaming = controller;
    setStreaming(true);
    let textSoFar = "";
    let pending = false;
    let finished = false;
    try {
      await sse(path, { method: "POST", body: body ? JSON.stringify(body) : undefined,
                        signal: controller.signal }, (event, data) => {
        if (event === "stored" && userItem) userItem.dataset.id = data.exchange_id;
        else if (event === "delta") {
          textSoFar += data.text;
          if (!pending) {  // re-render at most every 40 ms however fast tokens come
            pending = true;
            setTimeout(() => { pending = false; setContent(reply, textSoFar); scrollDown(); }, 40);
          }
        } else if (event === "notice") showNotice(data.text);
        else if (event === "error") showError(data.text || "the model failed");
        else if (event === "done") finished = Boolean(data.exchange_id);
      });
    } catch (e) {
      if (e.name !== "AbortError") showError(e.message);
    } finally {
      state.streaming = null;
      setStreaming(false);
      reply.classList.remove("streaming");
      setContent(reply, textSoFar);
      if (!textSoFar) reply.remove();
      // Then the conversation as stored: ids, versions, tools. A stopped reply is stored when the server sees
      // the hang-up, at its next token: until then the page keeps what it showed.
      if (controller.signal.aborted) settleAfterStop(state.current, Boolean(textSoFar));
      else await reloadMessages().catch(() => {});
      if (!finished && !textSoFar) $("composer-input").focus();
      loadSessions().catch(() => {});
      if (state.panel === "memory") loadMemory();
    }
  }

  function setStreaming(on) {
    $("send").hidden = on;
    $("stop").hidden = !on;
    $("composer-input").setAttribute("aria-busy", String(on));
  }

  // -- panels -------------------------------------------------------------------------------------

  function openPanel(name) {
    state.panel = state.panel === name ? null : name;
    $("panel").hidden = !state.panel;
    document.querySelectorAll(".tab").forEach((t) => t.setAttribute("aria-pressed", String(t.dataset.panel === state.panel)));
    document.querySelectorAll("#panel > section").forEach((s) => { s.hidden = s.dataset.panel !== state.panel; });
    if (state.logAbort && state.panel !== "dream") { state.logAbort.abort(); state.logAbort = null; }
    if (!state.panel) return;
    $("panel-title").textContent = { memory: "Memory", search: "Search", dream: "Dream", settings: "Settings" }[state.panel];
    ({ memory: loadMemory, search: openSearch, dream: loadDream, settings: loadSettings })[state.panel]();
  }

  function gauges(container, drives) {
    const names = { continuity: "Continuity", coherence: "Coherence", curiosity: "Curiosity", stability: "Stability" };
    container.replaceChildren(...Object.entries(names).map(([key, label]) => {
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

  async function loadMemory() {
    const load = ++state.memoryLoads;  // an older load that answers late must not overwrite a newer one
    try {
      const [self, world, profile, narrative, digests, sitrep, proposals, current] = await Promise.all([
        api("/api/self"), api("/api/world"), api("/api/profile"), api("/api/narrative"), api("/api/digests"),
        api("/api/sitrep?format=text"), api("/api/world/proposals"),
        state.current ? api(`/api/sessions/${state.current}/gist`) : { gist: null }]);
      if (load !== state.memoryLoads) return;
      const gist = current.gist;
      renderProposals(proposals.proposals);
      const off = state.sessions.find((s) => s.id === state.current)?.remember === false;
      if (off) $("session-gist").replaceChildren(el("p", { class: "muted", text: "Off the record: nothing of this conversation is summarized or remembered." }));
      else memoryItem($("session-gist"), { kind: "gist", id: gist && gist.id, text: gist && gist.content,
        method: gist && gist.method, label: "this conversation's summary", path: `/api/sessions/${state.current}/gist`,
        emptyText: "No summary yet: the dream cycle writes one when the conversation rests." });
      $("session-gist").dataset.session = state.current ?? "";  // whose summary this is (a switch re-renders it)
      renderSelf(self);
      if (document.activeElement !== $("world-input")) $("world-input").value = world.world ? world.world.content : "";
      renderProfile(profile.facts);
      memoryItem($("narrative"), { kind: "narrative", id: narrative.id, text: narrative.narrative,
        method: narrative.method, label: "the current arc", path: "/api/narrative", emptyText: "Not written yet." });
      renderTimeline(digests.digests);
      $("sitrep").textContent = sitrep;
    } catch (e) { showError(e.message); }
  }

  /* How the companion is, in words ("Lyra feels calm, and full of energy."); the numbers go to Advanced. */
  function renderSelf({ self_state: s, drives }) {
    $("self-mood").textContent = s ? moodWords(state.companion, s) : "I have not reflected yet.";
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

  // -- about you: a card per fact, to confirm, reject or edit ------------------------------------------

  function renderProfile(facts) {
    const list = $("profile");
    if (list.querySelector("[data-editing]")) return;  // a refresh waits until the person's edit ends
    const learnt = facts.filter((f) => f.new);
    for (const f of learnt) state.newFacts.add(f.id);
    list.replaceChildren(fragment(facts.map(factCard)));
    if (!facts.length) list.append(el("li", { class: "muted", text: "Nothing yet." }));
    // shown now: the server stops calling them new, and this page keeps its badges until it reloads
    if (learnt.length) api("/api/profile/seen", { method: "POST" }).catch((e) => showError(e.message));
  }

  function factCard(f) {
    const card = el("li", { class: "fact-card", "data-key": f.key, "data-id": f.id });
    const act = (how) => async () => {
      try { await api(`/api/profile/facts/${f.id}/${how}`, { method: "POST" }); loadMemory(); }
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
         state.newFacts.has(f.id) ? el("span", { class: "badge new", text: "new" }) : null,
         f.confirmed ? el("span", { class: "badge", text: "confirmed" }) : null),
      value, factSaid(f), el("div", { class: "row fact-actions" }, right, wrong, edit, sources), list);
    return card;
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
    const done = () => { delete card.dataset.editing; loadMemory(); };
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

  // -- the timeline: a fold per month, newest first, with days as a person says them ----------------------

  function renderTimeline(digests) {
    const box = $("timeline");
    if (box.querySelector("[data-editing]")) return;  // a refresh waits until the person's edit ends
    const opened = new Set([...box.querySelectorAll("details[open]")].map((d) => d.dataset.month));
    const months = new Map();
    for (const d of digests) {
      const month = D.periodMonth(d.period);
      if (!months.has(month)) months.set(month, []);
      months.get(month).push(d);
    }
    const rank = { month: 0, week: 1, day: 2 };
    // the month's own digest, then its weeks and days, newest first (a week before the days it begins with)
    const order = (a, b) => (a.granularity !== "month") - (b.granularity !== "month")
      || D.periodStart(b.period).localeCompare(D.periodStart(a.period)) || rank[a.granularity] - rank[b.granularity];
    box.replaceChildren(fragment([...months.keys()].sort().reverse().map((month) => {
      const items = months.get(month).sort(order);
      const counts = ["week", "day"].map((g) => [g, items.filter((d) => d.granularity === g).length])
        .filter(([, n]) => n).map(([g, n]) => `${n} ${g}${n > 1 ? "s" : ""}`).join(", ");
      return el("details", { class: "month", "data-month": month, open: opened.has(month) },
        el("summary", {}, el("span", { text: D.periodLabel(month) }), counts ? el("span", { class: "muted", text: ` · ${counts}` }) : null),
        el("ol", { class: "plain" }, fragment(items.map(timelineItem))));
    })));
    if (!digests.length) box.append(el("p", { class: "muted", text: "Empty so far." }));
  }

  function timelineItem(d) {
    const when = D.periodLabel(d.period);
    const body = el("div", { class: "memory-item" });
    memoryItem(body, { kind: "digest", id: d.id, text: d.content, method: d.method,
      label: d.granularity === "week" ? `the ${when}` : `the ${d.granularity} ${when}`, path: `/api/digests/${d.id}` });
    return el("li", { class: d.granularity }, el("time", { datetime: D.periodStart(d.period), text: when }), body);
  }

  // -- search: what I remember, by meaning and by words ---------------------------------------------

  function openSearch() { $("search-input").focus(); }

  // The kinds of memory as a person reads them, from the store's registry (GET /api/kinds).
  const TIER_NAMES = {};

  async function loadKinds() {
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
    if ($("search-here").checked && state.current) params.set("session_id", state.current);
    if (state.current) params.set("current_session_id", state.current);  // what was just said there ranks last
    params.set("order", $("search-order").value);
    $("search-status").textContent = "Searching…";
    try {
      const { results } = await api(`/api/search?${params}`);
      $("search-status").textContent = results.length ? `${results.length} found.` : "Nothing found.";
      $("search-results").replaceChildren(fragment(results.map(searchResult)));
    } catch (e) { $("search-status").textContent = ""; showError(e.message); }
  }

  function nextDay(day) {
    const d = new Date(`${day}T00:00:00Z`);
    d.setUTCDate(d.getUTCDate() + 1);
    return d.toISOString().slice(0, 10);
  }

  /* A result: its kind and the days it speaks of; its text cut around what matched, the matched words marked;
   * Open (a link) under the text, and Forget at the other end of the heading, away from it. */
  function searchResult(r) {
    const kind = TIER_NAMES[r.tier] || r.tier;
    const label = `the ${kind} “${clip(r.content, 40)}”`;
    const open = r.session_id ? openLink(r.session_id, r.turn_id, "Open", `Open ${r.session_name} at ${label}`) : null;
    const forget = el("button", { class: "link-button danger-link forget", text: "Forget", "aria-label": `Forget ${label}`,
      onclick: async () => {
        const also = r.tier === "exchange"
          ? " Its other versions, any branch that went on from them and, for a message of yours, Lyra's reply to it go too."
          : "";
        if (!await confirmForget(`Forget this ${kind}?`,
                                 `“${clip(r.content, 200)}” is forgotten, with what was built from it.${also}`)) return;
        try {
          await forgetResult(r);
          await runSearch();
          if (r.session_id === state.current) await reloadMessages();
        } catch (e) { showError(e.message); }
      } });
    const pieces = r.snippet && r.snippet.length ? r.snippet : [{ text: r.content, match: false }];
    return el("li", { class: "result", "data-tier": r.tier },
      el("div", { class: "result-head" }, el("span", { class: "badge", text: kind }), resultDate(r), forget),
      el("p", { class: "snippet" }, fragment(pieces.map((p) => (p.match ? el("mark", { text: p.text }) : p.text)))),
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

  async function loadDream() {
    try {
      const status = await api("/api/dream");
      gauges($("dream-drives"), status.drives);
      const b = status.backlog;
      const stats = [["Sessions waiting", b.sessions_pending], ["Turns waiting", b.turns_pending],
                     ["Gists to read", b.unprofiled], ["Digests to write", b.digest_jobs + b.obsolete_digests],
                     ["Since last reflection", `${b.novel_turns} turns`]];
      $("backlog").replaceChildren(...stats.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]));
      const last = status.last_pass;
      $("last-pass").textContent = last ? `Last pass: ${last.status}, ${new Date(last.finished_at).toLocaleString()}` +
        `, ${(last.actions || []).length} thing(s) done.` : "No pass yet.";
      setDreaming(status.running);
      if (!state.logAbort) followLog();
    } catch (e) { showError(e.message); }
  }

  function setDreaming(on) {
    state.dreaming = on;
    $("dream-progress").hidden = !on;
    $("dream-now").disabled = on;
    $("dream-now").textContent = on ? "Dreaming…" : "Dream now";
  }

  function followLog() {
    const controller = new AbortController();
    state.logAbort = controller;
    const after = state.lastEvent === null ? "" : `?after=${state.lastEvent}`;
    sse(`/api/dream/events${after}`, { signal: controller.signal }, (event, data) => {
      state.lastEvent = data.id;
      logLine(data);
      if (data.kind === "pass.start") setDreaming(true);
      if (data.kind === "pass.end") { setDreaming(false); loadDream(); }
    }).catch((e) => { if (e.name !== "AbortError") showError(e.message); });
  }

  function logLine(event) {
    const d = event.detail || {};
    const target = event.target || "";
    const describeEvent = {
      "pass.start": () => (d.forced ? "dream pass started (forced)" : "dream pass started"),
      "pass.end": () => `dream pass ${d.status}: ${d.actions ?? 0} thing(s) done`,
      gist: () => `summarized ${target}${d.progress ? ` (${d.progress})` : ""}`,
      profile: () => `read ${target}: ${Object.keys(d.facts || {}).join(", ") || "no new facts"}`,
      digest: () => `wrote the ${target.replace(":", " digest ")}`,
      narrative: () => "rewrote the current arc",
      reflect: () => `reflected: ${d.mood ?? ""}`,
      backoff: () => `model unreachable, retrying in ${d.delay_s}s`,
      skip: () => `${target}: another worker has it`,
      waiting: () => `${target}: waiting for another worker`,
      error: () => `${target}: ${d.error}`,
    }[event.kind];
    const what = describeEvent ? describeEvent() : `${event.kind} ${target}`;
    const time = new Date(event.at.endsWith("Z") || event.at.includes("+") ? event.at : event.at + "Z");
    const line = el("li", { class: `log-${event.kind.replace(".", "-")}` },
                    el("time", { datetime: event.at, text: time.toLocaleTimeString() }), el("span", { text: " " + what }));
    const log = $("dream-log");
    log.append(line);
    while (log.childElementCount > 200) log.firstElementChild.remove();
    log.scrollTop = log.scrollHeight;
  }

  async function loadSettings() {
    try {
      const s = await api("/api/settings");
      const rows = Object.entries(s.roles).map(([role, r]) => [
        `Model: ${role}`, r.backend === "local"
          ? `${r.model} (in-process, context ${r.n_ctx}, GPU layers ${r.n_gpu_layers})${r.shared_with ? ", shared with chat" : ""}`
          : `${r.model} at ${r.base_url}`]);
      rows.push(...s.warnings.map((w) => ["Warning", w]));
      rows.push(["GPU offload", s.gpu_offload ? "available" : "not in this build (CPU)"],
                ["Data directory", s.data_dir], ["Config file", s.config_file || "none (defaults)"],
                ["Version", s.version]);
      $("settings").replaceChildren(...rows.map(([k, v]) => el("tr", {}, el("th", { scope: "row", text: k }), el("td", { text: v }))));
      $("settings-how").textContent = s.how_to_change;
    } catch (e) { showError(e.message); }
  }

  function closeSessionsOnNarrow() {
    $("sessions").classList.remove("open");
    $("toggle-sessions").setAttribute("aria-expanded", "false");
  }

  // -- wiring ----------------------------------------------------------------------------------------

  function wire() {
    const input = $("composer-input");
    const autosize = () => { input.style.height = "auto"; input.style.height = `${Math.min(input.scrollHeight, 220)}px`; };
    input.addEventListener("input", autosize);
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); $("composer").requestSubmit(); }
    });
    $("composer").addEventListener("submit", (e) => {
      e.preventDefault();
      const text = input.value;
      if (!text.trim() || state.streaming) return;
      input.value = "";
      autosize();
      send(text);
    });
    $("stop").addEventListener("click", () => state.streaming && state.streaming.abort());
    $("new-session").addEventListener("click", () => newSession().then(() => input.focus()).catch((e) => showError(e.message)));
    $("new-off-record").addEventListener("click", () => newSession("Off the record", false).then(() => input.focus())
      .catch((e) => showError(e.message)));
    $("search-form").addEventListener("submit", (e) => { e.preventDefault(); runSearch(); });
    $("search-order").addEventListener("change", () => { if ($("search-input").value.trim()) runSearch(); });
    window.addEventListener("hashchange", () => openFromHash().catch((e) => showError(e.message)));
    document.querySelectorAll(".tab").forEach((t) => t.addEventListener("click", () => openPanel(t.dataset.panel)));
    $("close-panel").addEventListener("click", () => openPanel(state.panel));
    $("toggle-sessions").addEventListener("click", () => {
      const open = $("sessions").classList.toggle("open");
      $("toggle-sessions").setAttribute("aria-expanded", String(open));
    });
    $("world-save").addEventListener("click", async () => {
      try {
        await api("/api/world", { method: "PUT", body: { content: $("world-input").value } });
        $("world-status").textContent = "Saved.";
        setTimeout(() => { $("world-status").textContent = ""; }, 2500);
      } catch (e) { showError(e.message); }
    });
    $("fact-form").addEventListener("submit", async (e) => {
      e.preventDefault();
      try {
        await api("/api/profile", { method: "PUT", body: { key: $("fact-key").value, value: $("fact-value").value } });
        $("fact-key").value = $("fact-value").value = "";
        loadMemory();
      } catch (err) { showError(err.message); }
    });
    $("import-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const file = $("import-file").files[0];
      if (file) importFile(file);
    });
    $("export").addEventListener("click", () => download("/api/export"));
    $("backup").addEventListener("click", () => download("/api/backup"));
    $("dream-now").addEventListener("click", async () => {
      try {
        setDreaming(true);
        const result = await api("/api/dream?force=true", { method: "POST" });
        if (!result.started) showNotice(result.reason);
      } catch (e) { setDreaming(false); showError(e.message); }
    });
  }

  // -- your data: import with progress, export, backup ---------------------------------------------

  async function importFile(file) {
    const status = $("import-status");
    const bar = $("import-progress");
    $("import-start").disabled = true;
    bar.hidden = false;
    bar.removeAttribute("value");
    status.textContent = `Uploading ${file.name}…`;
    try {
      const resp = await fetch(`/api/import?filename=${encodeURIComponent(file.name)}`,
                               { method: "PUT", body: file, headers: headers() });
      const body = await resp.json();
      if (!resp.ok) throw new Error(describe(body, resp));
      await sse(`/api/import/${body.job}/events`, {}, (event, job) => {
        if (job.total) { bar.max = job.total; bar.value = job.done; }
        status.textContent = `Importing ${job.filename}: ${job.done.toLocaleString()} of ${job.total.toLocaleString()} messages`;
        if (event === "done") {
          const r = job.report;
          status.textContent = `Imported ${r.messages.toLocaleString()} messages: ${r.sessions_new} new conversations, ` +
            `${r.sessions_updated} updated, ${r.sessions_unchanged} already here.` +
            (r.problems.length ? ` Not imported: ${r.problems.join("; ")}` : "") + (r.memory ? ` ${r.memory}.` : "");
          loadSessions();
        }
        if (event === "failed") showError(job.error);
      });
    } catch (e) {
      showError(e.message);
      status.textContent = "";
    } finally {
      bar.hidden = true;
      $("import-start").disabled = false;
    }
  }

  async function download(path) {
    try {
      const resp = await fetch(path, { headers: headers() });
      if (!resp.ok) throw new Error(describe(await resp.json().catch(() => null), resp));
      const name = /filename="?([^";]+)"?/.exec(resp.headers.get("content-disposition") || "")?.[1] || "lyra-download";
      const url = URL.createObjectURL(await resp.blob());
      const a = el("a", { href: url, download: name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) { showError(e.message); }
  }

  async function start() {
    wire();
    try {
      const settings = await api("/api/settings");
      state.companion = settings.companion.name;
      state.user = settings.companion.user_name || "You";
      $("companion-name").textContent = state.companion;
      document.title = state.companion;
      await Promise.all([loadKinds(), loadSessions()]);
      // the conversation the address names, else the latest, unless the user already started one while we loaded
      if (await openFromHash()) return;
      if (state.sessions.length && state.current === null && !state.streaming) await selectSession(state.sessions[0].id);
    } catch (e) { showError(e.message); }
  }

  document.addEventListener("DOMContentLoaded", start);
})();
