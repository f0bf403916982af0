/* Markdown to DOM, safely: the text is never parsed as HTML. Every node is built
 * with createElement/textContent, so "<img onerror=...>" stays text; links keep
 * an href only for http(s) and mailto. Covers what a chat reply uses: fenced
 * code, headings, lists, quotes, paragraphs, `code`, **bold**, *italic*, links. */
"use strict";
(function () {
  const SAFE_URL = /^(https?:\/\/|mailto:)/i;

  function inline(parent, text) {
    // tokens: `code`, **bold**, *italic* / _italic_, [label](url), bare https:// links
    const pattern = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\n]+\*|_[^_\n]+_)|(\[[^\]\n]+\]\([^)\s]+\))|(https?:\/\/[^\s<>()]+)/;
    let rest = text;
    while (rest.length) {
      const m = pattern.exec(rest);
      if (!m) { parent.append(document.createTextNode(rest)); break; }
      if (m.index) parent.append(document.createTextNode(rest.slice(0, m.index)));
      const token = m[0];
      if (m[1]) {
        const code = document.createElement("code");
        code.textContent = token.slice(1, -1);
        parent.append(code);
      } else if (m[2]) {
        const b = document.createElement("strong");
        inline(b, token.slice(2, -2));
        parent.append(b);
      } else if (m[3]) {
        const i = document.createElement("em");
        inline(i, token.slice(1, -1));
        parent.append(i);
      } else if (m[4]) {
        const split = token.indexOf("](");
        link(parent, token.slice(1, split), token.slice(split + 2, -1));
      } else {
        link(parent, token, token);
      }
      rest = rest.slice(m.index + token.length);
    }
  }

  function link(parent, label, url) {
    if (!SAFE_URL.test(url)) {  // javascript:, data:, relative tricks: shown as text, not a link
      parent.append(document.createTextNode(label === url ? url : `${label} (${url})`));
      return;
    }
    const a = document.createElement("a");
    a.href = url;
    a.rel = "noopener noreferrer nofollow";
    a.target = "_blank";
    inline(a, label);
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
      const fence = /^\s*(```|~~~)\s*([\w+-]*)\s*$/.exec(line);
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
