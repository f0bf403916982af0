/* Markdown to DOM, safely: the text is never parsed as HTML. Every node is built
 * with createElement/textContent, so "<img onerror=...>" stays text; links keep
 * an href only for http(s) and mailto. Covers what a chat reply uses: fenced
 * code (each with a Copy button), headings, lists, quotes, GitHub-style tables,
 * paragraphs, `code`, **bold**, *italic*, links. Every construct is read in time
 * linear in the text, however hostile. Sizes and table lines live in markdown.css. */
"use strict";
(function () {
  const SAFE_URL = /^(https?:\/\/|mailto:)/i;

  function inline(parent, text, inLink = false) {
    // tokens: `code`, **bold**, *italic* / _italic_, [label](url), bare https:// links.
    // Every repeated class stops at the character that could start the next try (a label
    // at "[", a URL at "["), so no match attempt scans past the next "[": the cost
    // stays linear even on a hostile line of "[" or "[a](" (where an unbounded class would take seconds).
    const pattern = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\n]+\*|_[^_\n]+_)|(\[[^[\]\n]+\]\([^)[\s]+\))|(https?:\/\/[^\s<>()]+)/g;
    let at = 0;
    for (;;) {
      pattern.lastIndex = at;
      const m = pattern.exec(text);
      if (!m) { if (at < text.length) parent.append(document.createTextNode(text.slice(at))); break; }
      if (m.index > at) parent.append(document.createTextNode(text.slice(at, m.index)));
      const token = m[0];
      if (m[1]) {
        const code = document.createElement("code");
        code.textContent = token.slice(1, -1);
        parent.append(code);
      } else if (m[2]) {
        const b = document.createElement("strong");
        inline(b, token.slice(2, -2), inLink);
        parent.append(b);
      } else if (m[3]) {
        const i = document.createElement("em");
        inline(i, token.slice(1, -1), inLink);
        parent.append(i);
      } else if (inLink) {  // no link inside a link's label
        parent.append(document.createTextNode(token));
      } else if (m[4]) {
        const split = token.indexOf("](");
        link(parent, token.slice(1, split), token.slice(split + 2, -1));
      } else {
        link(parent, null, token);
      }
      at = m.index + token.length;
    }
  }

  function link(parent, label, url) {
    // label null: a bare URL, shown as itself (rendering it as inline text again would
    // find the same URL and recurse without end).
    if (!SAFE_URL.test(url)) {  // javascript:, data:, relative tricks: shown as text, not a link
      parent.append(document.createTextNode(label === null ? url : `${label} (${url})`));
      return;
    }
    const a = document.createElement("a");
    a.href = url;
    a.rel = "noopener noreferrer nofollow";
    a.target = "_blank";
    if (label === null) a.textContent = url;
    else inline(a, label, true);
    parent.append(a);
  }

  // A quote is a run of lines starting with ">"; what is inside is read again as Markdown, one level
  // deeper. The levels are frames on a stack, not nested calls; a line's quote markers are skipped by
  // moving where it starts (``from``), not by copying it; and a level's element joins its parent when
  // the level ends, when the parent is not yet in the tree (the DOM checks every ancestor of where a
  // node is inserted). So 40,000 nested ">" neither overflow the call stack nor take quadratic time.
  // Past MAX_DEPTH levels a ">" stays text: a quote deeper would leave its text no width in a bubble
  // (13 px a level), and Chromium's layout crashes the tab some thousands of levels deep.
  const MAX_DEPTH = 32;
  const QUOTE = /\s*>/y;
  const QUOTE_MARK = /\s*>\s?/y;
  const ITEM = /^\s*([-*+]|\d+[.)])\s+(.*)$/;
  const FENCE = /^\s*(```|~~~)\s*([\w+-]*)$/;
  const HEADING = /^(#{1,6})\s+(.*)$/;

  // Tables as GitHub reads them. A row is split once, with indexOf, at each "|" not written "\|" (that one
  // is kept as a "|", even inside `code`); the pipes at its ends are optional. A short row is padded with
  // empty cells, or with one spanning them where they would outnumber the row's characters: rows of "|"
  // build no more nodes than the text has characters. A header wider than MAX_COLUMNS stays text: Chromium
  // lays a table out in time rows x columns, and 50,000 columns over 50,000 rows crashed the tab.
  const DELIMITER = /^:?-+:?$/;
  const MAX_COLUMNS = 64;

  function cells(row) {  // the cells of a row, trimmed; null when it has no unescaped "|"
    const s = row.trim();
    const found = [];
    let cell = "";
    let from = 0;
    for (let k = s.indexOf("|"); k !== -1; k = s.indexOf("|", k + 1)) {
      if (k > 0 && s[k - 1] === "\\") { cell += s.slice(from, k - 1) + "|"; from = k + 1; continue; }
      found.push(cell + s.slice(from, k));
      cell = "";
      from = k + 1;
    }
    if (!found.length) return null;
    const last = cell + s.slice(from);
    if (last) found.push(last);  // else the row ended with a "|"
    return (s[0] === "|" ? found.slice(1) : found).map((c) => c.trim());
  }

  function alignments(row) {  // a delimiter row's class for each column ("" for none); null if not one
    const found = cells(row);
    if (!found || !found.length || !found.every((c) => DELIMITER.test(c))) return null;
    return found.map((c) => (c.endsWith(":") ? (c[0] === ":" ? "align-center" : "align-right")
      : (c[0] === ":" ? "align-left" : "")));
  }

  function table(head, aligns, rows) {
    const tableRow = (tag, values, size) => {
      const tr = document.createElement("tr");
      const shown = Math.min(values.length, aligns.length);  // extra cells are dropped
      for (let k = 0; k < shown; k++) {
        const cell = document.createElement(tag);
        if (aligns[k]) cell.className = aligns[k];
        inline(cell, values[k]);
        tr.append(cell);
      }
      const missing = aligns.length - shown;
      if (missing > size) {
        const pad = document.createElement(tag);
        pad.colSpan = missing;
        tr.append(pad);
      } else {
        for (let k = shown; k < aligns.length; k++) {
          const pad = document.createElement(tag);
          if (aligns[k]) pad.className = aligns[k];
          tr.append(pad);
        }
      }
      return tr;
    };
    const thead = document.createElement("thead");
    thead.append(tableRow("th", head, Infinity));  // as wide as the delimiter row: nothing missing
    const tbody = document.createElement("tbody");
    for (const row of rows) tbody.append(tableRow("td", cells(row) || [row.trim()], row.length));
    const grid = document.createElement("table");
    grid.append(thead);
    if (rows.length) grid.append(tbody);
    const wrap = document.createElement("div");
    wrap.className = "table-wrap";  // a wide table scrolls inside the bubble instead of widening the page
    wrap.append(grid);
    return wrap;
  }

  // A fenced block with its Copy button. The listener is attached here: the page's CSP allows no inline
  // handler. Over plain http (a phone on the LAN) there is no navigator.clipboard, so a hidden textarea
  // and execCommand("copy") stand in.
  function codeBlock(body, lang) {
    const pre = document.createElement("pre");
    const code = document.createElement("code");
    if (lang) code.dataset.lang = lang;
    code.textContent = body;
    pre.append(code);
    const button = document.createElement("button");
    button.type = "button";
    button.className = "copy-code";
    const say = (label, aria) => { button.textContent = label; button.setAttribute("aria-label", aria); };
    say("Copy", "Copy code");
    let timer = 0;
    button.addEventListener("click", () => {
      copyText(code.textContent).then(() => say("Copied", "Copied"), () => say("Copy failed", "Copy failed"))
        .then(() => { clearTimeout(timer); timer = setTimeout(() => say("Copy", "Copy code"), 1500); });
    });
    const block = document.createElement("div");
    block.className = "code-block";
    block.append(pre, button);
    return block;
  }

  function copyText(text) {
    if (navigator.clipboard && navigator.clipboard.writeText) {
      return navigator.clipboard.writeText(text).catch(() => copyBySelection(text));
    }
    return copyBySelection(text);
  }

  function copyBySelection(text) {
    return new Promise((resolve, reject) => {
      const area = document.createElement("textarea");
      area.value = text;
      area.readOnly = true;
      // CSSOM, not a style attribute: style-src 'self' allows it. Fixed at the corner: selecting does not scroll.
      Object.assign(area.style, { position: "fixed", top: "0", left: "0", width: "1px", height: "1px", opacity: "0" });
      const focused = document.activeElement;
      document.body.append(area);
      area.select();
      area.setSelectionRange(0, text.length);
      let copied = false;
      try { copied = document.execCommand("copy"); } catch { copied = false; }
      area.remove();
      if (focused && focused.focus) focused.focus({ preventScroll: true });
      if (copied) resolve(); else reject(new Error("the browser refused to copy"));
    });
  }

  function render(source) {
    const root = document.createDocumentFragment();
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    const from = new Array(lines.length).fill(0);
    const quoted = (n) => { QUOTE.lastIndex = from[n]; return QUOTE.test(lines[n]); };
    const text = (n) => (from[n] ? lines[n].slice(from[n]) : lines[n]);
    const opensQuote = (n) => stack.length <= MAX_DEPTH && quoted(n);
    // A line that starts a block of its own: it ends a table (as a blank line does) and is never a row.
    const startsBlock = (n) => {
      if (opensQuote(n)) return true;
      const line = text(n).trimEnd();
      return !line || FENCE.test(line) || HEADING.test(line) || ITEM.test(line);
    };
    const flush = (frame) => {
      if (!frame.para.length) return;
      const p = document.createElement("p");
      frame.para.forEach((line, n) => { if (n) p.append(document.createElement("br")); inline(p, line); });
      frame.out.append(p);
      frame.para = [];
    };
    // The open levels, innermost last: each holds its lines up to ``end``, its blocks go into ``out``.
    const stack = [{ out: root, end: lines.length, para: [] }];
    let i = 0;
    while (stack.length) {
      const frame = stack[stack.length - 1];
      const { out, end } = frame;
      if (i >= end) {
        flush(frame);
        stack.pop();
        if (stack.length) stack[stack.length - 1].out.append(out);  // its parent has added nothing since
        continue;
      }
      if (opensQuote(i)) {  // first: a ">" line is never a fence, a heading or an item
        flush(frame);
        const quote = document.createElement("blockquote");
        let last = i;
        while (last < end && quoted(last)) {
          QUOTE_MARK.lastIndex = from[last];
          QUOTE_MARK.test(lines[last]);
          from[last++] = QUOTE_MARK.lastIndex;
        }
        stack.push({ out: quote, end: last, para: [] });
        continue;
      }
      const line = text(i);
      const fence = FENCE.exec(line.trimEnd());  // trimmed: no two \s* to share spaces
      if (fence) {
        flush(frame);
        const closing = new RegExp("^\\s*" + fence[1] + "\\s*$");
        const body = [];
        i += 1;
        while (i < end && !closing.test(text(i))) body.push(text(i++));
        if (i < end) i += 1;  // the closing fence (none at the end of a reply still streaming)
        out.append(codeBlock(body.join("\n"), fence[2]));
        continue;
      }
      const heading = HEADING.exec(line);
      if (heading) {
        flush(frame);
        // "#" is h3: the page owns h1 and h2, and a reply's outline sits under them. markdown.css sizes them.
        const h = document.createElement(`h${Math.min(6, heading[1].length + 2)}`);
        inline(h, heading[2]);
        out.append(h);
        i += 1;
        continue;
      }
      const item = ITEM.exec(line);
      if (item) {
        flush(frame);
        const ordered = /\d/.test(item[1]);
        const list = document.createElement(ordered ? "ol" : "ul");
        while (i < end) {
          const m = ITEM.exec(text(i));
          if (!m || /\d/.test(m[1]) !== ordered) break;
          const li = document.createElement("li");
          inline(li, m[2]);
          list.append(li);
          i += 1;
        }
        out.append(list);
        continue;
      }
      // A table: a row with a "|", then a delimiter row of as many cells (|---|:--:|) not in a deeper quote.
      const aligns = line.includes("|") && i + 1 < end && !opensQuote(i + 1) ? alignments(text(i + 1)) : null;
      const head = aligns && cells(line);
      if (head && head.length === aligns.length && head.length <= MAX_COLUMNS) {
        flush(frame);
        const rows = [];
        for (i += 2; i < end && !startsBlock(i); i += 1) rows.push(text(i));
        out.append(table(head, aligns, rows));
        continue;
      }
      if (!line.trim()) { flush(frame); i += 1; continue; }
      frame.para.push(line);
      i += 1;
    }
    return root;
  }

  window.LyraMarkdown = { render, copyText };  // copyText: the one clipboard path, a message's Copy uses it too
})();
