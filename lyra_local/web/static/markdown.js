/* Markdown to DOM, safely: the text is never parsed as HTML. Every node is built
 * with createElement/textContent, so "<img onerror=...>" stays text; links keep
 * an href only for http(s) and mailto. Covers what a chat reply uses: fenced
 * code, headings, lists, quotes, paragraphs, `code`, **bold**, *italic*, links. */
"use strict";
(function () {
  const SAFE_URL = /^(https?:\/\/|mailto:)/i;

  function inline(parent, text, inLink = false) {
    // tokens: `code`, **bold**, *italic* / _italic_, [label](url), bare https:// links.
    // Every repeated class stops at the character that could start the next try (a label
    // at "[", a URL at "["), so no match attempt scans past the next "[": the cost
    // stays linear even on a hostile line of "[" or "[a](" (which used to take seconds).
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

  function render(source) {
    const root = document.createDocumentFragment();
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    const from = new Array(lines.length).fill(0);
    const quoted = (n) => { QUOTE.lastIndex = from[n]; return QUOTE.test(lines[n]); };
    const text = (n) => (from[n] ? lines[n].slice(from[n]) : lines[n]);
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
      if (stack.length <= MAX_DEPTH && quoted(i)) {  // first: a ">" line is never a fence, a heading or an item
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
      const fence = /^\s*(```|~~~)\s*([\w+-]*)$/.exec(line.trimEnd());  // trimmed: no two \s* to share spaces
      if (fence) {
        flush(frame);
        const closing = new RegExp("^\\s*" + fence[1] + "\\s*$");
        const body = [];
        i += 1;
        while (i < end && !closing.test(text(i))) body.push(text(i++));
        if (i < end) i += 1;  // the closing fence (none at the end of a reply still streaming)
        const pre = document.createElement("pre");
        const code = document.createElement("code");
        if (fence[2]) code.dataset.lang = fence[2];
        code.textContent = body.join("\n");
        pre.append(code);
        out.append(pre);
        continue;
      }
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      if (heading) {
        flush(frame);
        const h = document.createElement(`h${Math.min(6, heading[1].length + 3)}`);
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
      if (!line.trim()) { flush(frame); i += 1; continue; }
      frame.para.push(line);
      i += 1;
    }
    return root;
  }

  window.LyraMarkdown = { render };
})();
