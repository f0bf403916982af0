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

  function render(source) {
    const out = document.createDocumentFragment();
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    let para = [];
    const flush = () => {
      if (!para.length) return;
      const p = document.createElement("p");
      para.forEach((line, n) => { if (n) p.append(document.createElement("br")); inline(p, line); });
      out.append(p);
      para = [];
    };
    while (i < lines.length) {
      const line = lines[i];
      const fence = /^\s*(```|~~~)\s*([\w+-]*)$/.exec(line.trimEnd());  // trimmed: no two \s* to share spaces
      if (fence) {
        flush();
        const body = [];
        i += 1;
        while (i < lines.length && !new RegExp("^\\s*" + fence[1] + "\\s*$").test(lines[i])) body.push(lines[i++]);
        i += 1;  // the closing fence (or the end of a reply still streaming)
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
        flush();
        const h = document.createElement(`h${Math.min(6, heading[1].length + 3)}`);
        inline(h, heading[2]);
        out.append(h);
        i += 1;
        continue;
      }
      const item = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(line);
      if (item) {
        flush();
        const ordered = /\d/.test(item[1]);
        const list = document.createElement(ordered ? "ol" : "ul");
        while (i < lines.length) {
          const m = /^\s*([-*+]|\d+[.)])\s+(.*)$/.exec(lines[i]);
          if (!m || /\d/.test(m[1]) !== ordered) break;
          const li = document.createElement("li");
          inline(li, m[2]);
          list.append(li);
          i += 1;
        }
        out.append(list);
        continue;
      }
      if (/^\s*>/.test(line)) {
        flush();
        const quote = document.createElement("blockquote");
        const body = [];
        while (i < lines.length && /^\s*>/.test(lines[i])) body.push(lines[i++].replace(/^\s*>\s?/, ""));
        quote.append(render(body.join("\n")));
        out.append(quote);
        continue;
      }
      if (!line.trim()) { flush(); i += 1; continue; }
      para.push(line);
      i += 1;
    }
    flush();
    return out;
  }

  window.LyraMarkdown = { render };
})();
