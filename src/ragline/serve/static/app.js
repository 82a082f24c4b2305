// The ragline web page: sign in with an API key, ask (streamed, cited answers) or search,
// read the cited passages, browse documents (upload/delete with an admin key) and traces.
// Plain DOM, no framework. Every piece of server or document text goes in as a text node
// (textContent / append of strings), never as HTML: documents can hold hostile markup.
"use strict";

(() => {
  const STORE = "ragline.apiKey";
  const MARKER = /\[(\d+(?:\s*,\s*\d+)*)\]/g;
  const STAGES = ["embed_query", "rewrite", "plan", "bm25", "vector", "fuse", "rerank",
    "hydrate", "pack", "generate"];
  const $ = (id) => document.getElementById(id);
  const state = { key: null, me: null, current: null, asking: null, lastFocus: null, traceSeq: 0 };

  // -- DOM helpers ------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v == null || v === false) continue;
      if (k === "class") n.className = v;
      else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
      else n.setAttribute(k, v === true ? "" : String(v));
    }
    return add(n, children);
  }
  function add(n, children) {
    for (const c of children.flat(Infinity)) {
      if (c == null || c === false) continue;
      n.append(c instanceof Node ? c : String(c)); // strings become text nodes
    }
    return n;
  }
  function fill(n, ...children) {
    n.replaceChildren();
    return add(n, children);
  }
  const show = (n, on) => { n.hidden = !on; };
  // Answers come with markup made inert for chat UIs that render HTML or Markdown ("<" that
  // would open a tag as "&lt;", "](" of a script link as "\\]("); this page shows text as
  // text, so it shows them as written.
  const plain = (s) => (typeof s === "string" ? s.replace(/&lt;/g, "<").replace(/\\\]\(/g, "](") : s);
  function plainAnswer(a) {
    if (!a) return a;
    const cite = (c) => ({ ...c, title: plain(c.title), quote: plain(c.quote), text: plain(c.text),
      heading_path: (c.heading_path || []).map(plain) });
    return { ...a, answer: plain(a.answer), claims: (a.claims || []).map((c) => ({ ...c, text: plain(c.text) })),
      citations: (a.citations || []).map(cite) };
  }

  function fmtDate(iso) {
    if (!iso) return "—";
    const d = new Date(iso);
    if (Number.isNaN(d.getTime())) return String(iso);
    return d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric",
      hour: "2-digit", minute: "2-digit" });
  }
  function fmtNum(x) {
    if (x == null || Number.isNaN(Number(x))) return "—";
    const v = Number(x);
    return Math.abs(v) >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toPrecision(3);
  }
  const fmtMs = (x) => (x == null ? "—" : `${Number(x).toFixed(Number(x) < 10 ? 1 : 0)} ms`);
  const crumbs = (c) => {
    const path = (c.heading_path || []).slice();
    if (path.length && path[0] === c.title) path.shift();
    return path.join(" › ");
  };
  function sourceNode(src) {
    if (!src) return "—";
    if (/^https?:\/\//i.test(src)) {
      return el("a", { href: src, target: "_blank", rel: "noopener noreferrer" }, src);
    }
    return el("span", { class: "mono" }, src);
  }
  const traceLink = (id) => id && el("a", { href: `#trace/${encodeURIComponent(id)}`, class: "trace-link" }, "View trace");
  const errorBox = (msg) => el("p", { class: "error", role: "alert" }, msg);

  // -- API --------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(message, status) { super(message); this.status = status; }
  }
  async function errorOf(res) {
    let msg = `${res.status} ${res.statusText}`;
    try {
      const j = await res.json();
      if (j && j.error && j.error.message) msg = j.error.message;
    } catch (_) { /* not JSON */ }
    return new ApiError(msg, res.status);
  }
  async function api(path, { method = "GET", json, form, signal, key } = {}) {
    const headers = { Authorization: `Bearer ${key || state.key}` };
    let body;
    if (json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(json);
    } else if (form) body = form;
    let res;
    try {
      res = await fetch(path, { method, headers, body, signal });
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw new ApiError(`cannot reach the server (${e.message})`, 0);
    }
    if (!res.ok) throw await errorOf(res);
    return res;
  }
  const getJSON = async (path, opts) => (await api(path, opts)).json();
  // A refused key (revoked meanwhile) signs out; other errors are shown where they happened.
  function failed(err, target) {
    if (err.status === 401) { signOut(`Your key was refused: ${err.message}`); return; }
    if (target) fill(target, err.message);
    if (target) show(target, true);
  }

  // Server-sent events over fetch (EventSource cannot POST): yields {event, data}.
  async function* events(res) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = "";
    const parse = (block) => {
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const i = line.indexOf(":");
        const field = i < 0 ? line : line.slice(0, i);
        let value = i < 0 ? "" : line.slice(i + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "event") event = value;
        else if (field === "data") data.push(value);
      }
      return data.length ? { event, data: data.join("\n") } : null;
    };
    for (;;) {
      const { value, done } = await reader.read();
      buf += done ? decoder.decode() : decoder.decode(value, { stream: true });
      buf = buf.replace(/\r\n/g, "\n");
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const ev = parse(buf.slice(0, i));
        buf = buf.slice(i + 2);
        if (ev) yield ev;
      }
      if (done) break;
    }
    const last = parse(buf);
    if (last) yield last;
  }

  // -- sign in ----------------------------------------------------------------------
  async function useKey(key) {
    const me = await getJSON("/v1/me", { key });
    state.key = key;
    state.me = me;
    try { localStorage.setItem(STORE, key); } catch (_) { /* storage off: this tab only */ }
    fill($("who-text"),
      el("strong", {}, me.tenant), " · ",
      el("span", { class: me.admin ? "badge admin" : "badge" }, me.admin ? "admin" : "reader"),
      me.groups && me.groups.length ? ` · groups: ${me.groups.join(", ")}` : "",
      " · ", el("span", { class: "mono" }, `${me.key_prefix}…`));
    show($("who"), true);
    show($("nav"), true);
  }
  function signOut(message) {
    if (state.asking) state.asking.abort();
    state.key = null;
    state.me = null;
    try { localStorage.removeItem(STORE); } catch (_) { /* ignore */ }
    show($("who"), false);
    show($("nav"), false);
    fill($("answer-body"));
    fill($("answer-extra"));
    fill($("history"));
    show($("answer"), false);
    show($("history-wrap"), false);
    state.current = null;
    const err = $("key-error");
    fill(err, message || "");
    show(err, Boolean(message));
    $("key-input").value = "";
    // The next key may see other documents and traces: start again from the ask view.
    history.replaceState(null, "", "#ask");
    route();
    $("key-input").focus();
  }

  // -- ask and search ---------------------------------------------------------------
  function answerText(text, citations) {
    const byNumber = new Map((citations || []).map((c) => [c.number, c]));
    const out = [];
    let last = 0;
    for (const m of (text || "").matchAll(MARKER)) {
      out.push(text.slice(last, m.index));
      const nums = m[1].split(",").map((s) => parseInt(s.trim(), 10));
      if (nums.every((n) => byNumber.has(n))) {
        out.push(el("span", { class: "cites" }, nums.map((n) => citeButton(byNumber.get(n)))));
      } else out.push(m[0]);
      last = m.index + m[0].length;
    }
    out.push((text || "").slice(last));
    return out;
  }
  function citeButton(c) {
    const name = c.title || c.doc_key || "source";
    return el("button", {
      type: "button", class: "cite", "data-cite": c.number,
      "aria-label": `Source ${c.number}: ${name}`, title: name,
      onclick: (ev) => openPassage(c, ev.currentTarget),
    }, String(c.number));
  }
  function renderAnswer(a) {
    const notes = a.notes && a.notes.length
      ? el("ul", { class: "notes" }, a.notes.map((n) => el("li", {}, n))) : null;
    if (a.abstained) {
      return el("div", { class: "abstained", "data-abstained": "true" },
        el("p", { class: "abstained-title" }, "The sources do not answer this question"),
        a.answer ? el("p", { class: "muted" }, a.answer) : null, notes);
    }
    return el("div", {}, el("p", { class: "answer-text" }, answerText(a.answer, a.citations)), notes);
  }
  function renderAnswerExtra(a) {
    const cits = a.citations || [];
    const meta = el("p", { class: "meta-line muted small" },
      `Generator: ${a.generator || "—"}`,
      a.evidence != null ? ` · evidence ${fmtNum(a.evidence)}` : "",
      a.grounded_ratio != null ? ` · grounded ${Math.round(a.grounded_ratio * 100)}%` : "",
      a.prompt_tokens != null ? ` · ${a.prompt_tokens} prompt tokens` : "",
      a.trace_id ? " · " : "", traceLink(a.trace_id));
    const claims = a.claims || [];
    const ok = claims.filter((c) => c.supported).length;
    return [
      cits.length ? el("section", { class: "sources", "aria-label": "Sources" },
        el("h3", { class: "sub" }, "Sources"),
        el("ol", { class: "source-list" }, cits.map((c) => el("li", {},
          el("button", { type: "button", class: "source-link", "data-source": c.number,
            onclick: (ev) => openPassage(c, ev.currentTarget) },
          el("span", { class: "num" }, `[${c.number}]`), " ", c.title || c.doc_key),
          crumbs(c) ? el("span", { class: "path" }, ` ${crumbs(c)}`) : null,
          c.page != null ? el("span", { class: "muted small" }, ` · page ${c.page}`) : null,
          c.valid === false ? el("span", { class: "warn small" }, " · passage no longer indexed") : null,
          el("div", { class: "muted small" }, sourceNode(c.source)))))) : null,
      claims.length ? el("details", { class: "claims" },
        el("summary", {}, `Claim check: ${ok} of ${claims.length} supported`),
        el("ul", {}, claims.map((c) => el("li", { class: c.supported ? "ok" : "bad" },
          c.supported ? "✓ " : "✗ ", c.text,
          el("span", { class: "muted small" },
            ` (support ${fmtNum(c.support)}${c.cited && c.cited.length ? `, cites ${c.cited.join(", ")}` : ""})`))))) : null,
      meta,
    ];
  }
  function renderSearch(r) {
    const hits = r.hits || [];
    const body = hits.length ? el("ol", { class: "hits" }, hits.map((h) => el("li", { class: "hit" },
      el("div", { class: "hit-head" },
        el("button", { type: "button", class: "source-link", "data-hit": h.rank,
          onclick: (ev) => openPassage(h, ev.currentTarget) }, h.title || h.doc_key),
        crumbs(h) ? el("span", { class: "path" }, crumbs(h)) : null,
        el("span", { class: "score" }, `score ${fmtNum(h.score)}`)),
      el("div", { class: "muted small" }, Object.entries(h.ranks || {})
        .map(([k, v]) => `${k} #${v}`).join(" · "), h.page != null ? ` · page ${h.page}` : ""),
      el("p", { class: "snippet" }, (h.text || "").length > 320 ? `${h.text.slice(0, 320)}…` : h.text))))
      : el("p", { class: "muted" }, "No passages matched.");
    const total = r.timings_ms && r.timings_ms.total;
    return [body, el("p", { class: "meta-line muted small" }, `${hits.length} hits · mode ${r.mode}`,
      total != null ? ` · ${fmtMs(total)}` : "", r.trace_id ? " · " : "", traceLink(r.trace_id))];
  }
  function archive() {
    const cur = state.current;
    state.current = null;
    if (!cur) return;
    const card = el("article", { class: "card past" }, el("h3", { class: "question" }, cur.question),
      cur.kind === "search" ? renderSearch(cur.result) : [renderAnswer(cur.answer), renderAnswerExtra(cur.answer)]);
    $("history").prepend(card);
    while ($("history").children.length > 20) $("history").lastChild.remove();
    show($("history-wrap"), true);
  }
  function begin(question, status) {
    archive();
    if (state.asking) state.asking.abort();
    const ctl = new AbortController();
    state.asking = ctl;
    const sec = $("answer");
    show(sec, true);
    sec.dataset.state = "working";
    $("answer-question").textContent = question;
    $("answer-status").textContent = status;
    $("answer-body").setAttribute("aria-busy", "true");
    fill($("answer-body"));
    fill($("answer-extra"));
    return ctl;
  }
  function finish(stateName, status) {
    $("answer").dataset.state = stateName;
    $("answer-status").textContent = status;
    $("answer-body").setAttribute("aria-busy", "false");
  }
  async function ask(question, agent) {
    const ctl = begin(question, agent ? "Researching: searching, judging, rewriting…" : "Searching your documents…");
    const streamed = el("p", { class: "answer-text streaming" });
    $("answer-body").append(streamed);
    try {
      const body = agent ? { question, stream: true, agent } : { question, stream: true };
      const res = await api("/v1/ask", { method: "POST", json: body, signal: ctl.signal });
      let answer = null;
      for await (const ev of events(res)) {
        if (ev.event === "delta") {
          streamed.append(plain(JSON.parse(ev.data).text || ""));
          $("answer-status").textContent = "Writing the answer…";
        } else if (ev.event === "answer") answer = plainAnswer(JSON.parse(ev.data));
        else if (ev.event === "error") throw new ApiError(JSON.parse(ev.data).message || "the answer failed", 500);
      }
      if (!answer) throw new ApiError("the answer stream ended before the final answer", 0);
      if (state.asking !== ctl) return;
      state.current = { kind: "ask", question, answer };
      fill($("answer-body"), renderAnswer(answer));
      fill($("answer-extra"), renderAnswerExtra(answer));
      finish(answer.abstained ? "abstained" : "done", "");
    } catch (e) {
      showFailure(ctl, e);
    } finally {
      if (state.asking === ctl) state.asking = null;
    }
  }
  // an ask or search that failed, unless it was cancelled or replaced by a newer one
  function showFailure(ctl, e) {
    if (e.name === "AbortError" || state.asking !== ctl) return;
    finish("error", "");
    $("answer-body").append(errorBox(e.message));
    failed(e);
  }
  async function search(query) {
    const ctl = begin(query, "Searching…");
    try {
      const r = await getJSON("/v1/search", { method: "POST", json: { query, k: 10 }, signal: ctl.signal });
      if (state.asking !== ctl) return;
      state.current = { kind: "search", question: query, result: r };
      const [list, meta] = renderSearch(r);
      fill($("answer-body"), list);
      fill($("answer-extra"), meta);
      finish("done", "");
    } catch (e) {
      showFailure(ctl, e);
    } finally {
      if (state.asking === ctl) state.asking = null;
    }
  }

  // -- the passage panel --------------------------------------------------------------
  function findQuote(text, quote) {
    if (!text || !quote) return null;
    const tries = [quote, ...quote.split(/…|\.\.\./).filter((s) => s.trim().length > 15)];
    for (const q of tries) {
      const i = text.indexOf(q);
      if (i >= 0) return [i, i + q.length];
      const words = q.trim().split(/\s+/).filter(Boolean).map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
      if (!words.length) continue;
      const m = new RegExp(words.join("\\s+"), "i").exec(text);
      if (m) return [m.index, m.index + m[0].length];
    }
    return null;
  }
  function openPassage(c, trigger) {
    state.lastFocus = trigger || document.activeElement;
    const panel = $("passage-panel");
    $("passage-title").textContent = (c.number != null ? `[${c.number}] ` : "") + (c.title || c.doc_key || "Passage");
    const path = crumbs(c);
    $("passage-path").textContent = path;
    show($("passage-path"), Boolean(path));
    const rows = [["Page", c.page != null ? String(c.page) : "—"], ["Date", fmtDate(c.modified_at)],
      ["Score", fmtNum(c.score)], ["Source", sourceNode(c.source)], ["Chunk", c.chunk_id != null ? String(c.chunk_id) : "—"]];
    fill($("passage-meta"), rows.map(([k, v]) => el("div", {}, el("dt", {}, k), el("dd", {}, v))));
    const box = $("passage-text");
    const span = findQuote(c.text, c.quote);
    if (c.text) {
      fill(box, span ? [c.text.slice(0, span[0]), el("mark", {}, c.text.slice(span[0], span[1])), c.text.slice(span[1])] : c.text);
      fill($("passage-note"), c.quote && !span ? el("p", { class: "muted small" }, "The quoted sentence was not found verbatim in this passage.") : null);
    } else {
      fill(box, c.quote ? el("mark", {}, c.quote) : "");
      fill($("passage-note"), el("p", { class: "warn small" },
        "This passage is no longer in the index (the document changed or was deleted); the quote is shown."));
    }
    show(panel, true);
    box.scrollTop = 0;
    const mark = box.querySelector("mark");
    if (mark) mark.scrollIntoView({ block: "center" });
    $("passage-close").focus();
  }
  function closePassage() {
    const panel = $("passage-panel");
    if (panel.hidden) return;
    show(panel, false);
    if (state.lastFocus && document.contains(state.lastFocus)) state.lastFocus.focus();
  }

  // -- documents ----------------------------------------------------------------------
  async function loadDocuments(message) {
    const admin = Boolean(state.me && state.me.admin);
    show($("upload-form"), admin);
    show($("docs-readonly"), !admin);
    show($("docs-error"), false);
    const list = $("docs-list");
    if (!list.firstChild) fill(list, el("p", { class: "muted" }, "Loading…"));
    let docs;
    try {
      docs = (await getJSON("/v1/documents")).documents;
    } catch (e) { failed(e, $("docs-error")); return; }
    const head = ["Title", "Source", "Type", "Version", "Chunks", "Groups", "Language", "Ingested"];
    if (admin) head.push("Actions");
    fill(list,
      message ? el("p", { class: "ok", role: "status" }, message) : null,
      docs.length ? el("table", { class: "table", id: "docs-table" },
        el("caption", { class: "muted" }, `${docs.length} document${docs.length === 1 ? "" : "s"}`),
        el("thead", {}, el("tr", {}, head.map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, docs.map((d) => el("tr", { "data-doc": d.id },
          el("td", {}, d.title || d.doc_key), el("td", { class: "src" }, sourceNode(d.source)),
          el("td", {}, d.media_type || "—"), el("td", { class: "num" }, d.version),
          el("td", { class: "num" }, d.chunks), el("td", {}, d.groups && d.groups.length ? d.groups.join(", ") : "everyone"),
          el("td", {}, d.language || "—"), el("td", {}, fmtDate(d.ingested_at)),
          admin ? el("td", {}, deleteControl(d)) : null))))
        : el("p", { class: "muted" }, "No documents yet."));
  }
  function deleteControl(d) {
    const cell = el("span", { class: "actions" });
    const confirmStep = () => fill(cell,
      el("button", { type: "button", class: "danger", onclick: async (ev) => {
        ev.currentTarget.disabled = true;
        try {
          await api(`/v1/documents/${encodeURIComponent(d.id)}`, { method: "DELETE" });
          await loadDocuments(`Deleted “${d.title || d.doc_key}”.`);
          $("docs-title").focus();
        } catch (e) { failed(e, $("docs-error")); confirmStep(); }
      } }, "Confirm delete"), " ",
      el("button", { type: "button", onclick: idle }, "Cancel"));
    const idle = () => fill(cell, el("button", { type: "button", "aria-label": `Delete ${d.title || d.doc_key}`,
      onclick: () => { confirmStep(); cell.querySelector("button").focus(); } }, "Delete"));
    idle();
    return cell;
  }
  async function upload(ev) {
    ev.preventDefault();
    const status = $("upload-status");
    const files = $("upload-files").files;
    if (!files.length) { fill(status, errorBox("Choose one or more files first.")); return; }
    const meta = $("upload-metadata").value.trim();
    if (meta) {
      let parsed;
      try { parsed = JSON.parse(meta); } catch (e) { parsed = null; }
      if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
        fill(status, errorBox('Metadata must be a JSON object, e.g. {"department": "hr"}.'));
        return;
      }
    }
    const form = new FormData();
    for (const f of files) form.append("files", f, f.name);
    form.append("groups", $("upload-groups").value);
    if (meta) form.append("metadata", meta);
    const button = $("upload-submit");
    button.disabled = true;
    const bar = el("progress", { max: files.length, value: 0 });
    const text = el("span", {}, "Uploading…");
    fill(status, el("div", { class: "progress" }, bar, " ", text));
    try {
      let job = (await getJSON("/v1/documents", { method: "POST", form })).job;
      while (job.status === "queued" || job.status === "running") {
        bar.max = job.total || files.length;
        bar.value = job.done || 0;
        text.textContent = job.status === "queued" ? "Waiting to start…" : `Ingesting: ${job.done} of ${job.total} files`;
        await new Promise((r) => setTimeout(r, 400));
        job = await getJSON(`/v1/jobs/${encodeURIComponent(job.id)}`);
      }
      bar.value = bar.max;
      fill(status, jobReport(job));
      $("upload-files").value = "";
      await loadDocuments();
    } catch (e) {
      fill(status, errorBox(e.message));
      failed(e);
    } finally {
      button.disabled = false;
    }
  }
  function jobReport(job) {
    if (job.status === "failed") return errorBox(`The upload job failed: ${job.error || "unknown error"}`);
    const r = job.report || {};
    const n = (k) => (r[k] || []).length;
    const problems = [...(r.failed || []), ...(r.skipped || [])];
    return el("div", { class: "job-report", "data-job": job.status },
      el("p", { class: problems.length ? "warn" : "ok" },
        `Done: ${n("added")} added, ${n("updated")} updated, ${n("unchanged")} unchanged, ${problems.length} failed`,
        r.chunks != null ? ` (${r.chunks} chunks)` : "", "."),
      problems.length ? el("ul", { class: "failures" }, problems.map((f) => el("li", {},
        el("strong", {}, f.source), ": ", f.error || f.reason || "failed",
        f.error && f.reason ? el("span", { class: "muted" }, ` (${f.reason})`) : null))) : null);
  }

  // -- traces -------------------------------------------------------------------------
  async function loadTraces() {
    show($("traces-error"), false);
    let traces;
    try {
      traces = (await getJSON("/v1/traces?limit=20")).traces;
    } catch (e) { failed(e, $("traces-error")); return; }
    fill($("traces-list"), el("h2", { class: "sub" }, "Recent"),
      traces.length ? el("table", { class: "table", id: "traces-table" },
        el("thead", {}, el("tr", {}, ["When", "Kind", "Question", "Mode", "Result", "Total"].map((h) => el("th", { scope: "col" }, h)))),
        el("tbody", {}, traces.map((t) => el("tr", {},
          el("td", {}, fmtDate(t.created_at)), el("td", {}, t.kind),
          el("td", {}, el("a", { href: `#trace/${encodeURIComponent(t.id)}` }, t.question || t.id)),
          el("td", {}, t.mode || "—"),
          el("td", {}, t.kind !== "ask" ? "—" : t.abstained ? el("span", { class: "warn" }, "abstained") : "answered"),
          el("td", { class: "num" }, fmtMs(t.total_ms))))))
        : el("p", { class: "muted" }, "No traces yet: ask a question first."));
  }
  async function showTrace(id) {
    const seq = ++state.traceSeq;
    const box = $("trace-detail");
    fill(box, el("p", { class: "muted" }, "Loading trace…"));
    try {
      const t = await getJSON(`/v1/traces/${encodeURIComponent(id)}`);
      if (seq === state.traceSeq) fill(box, renderTrace(t));
    } catch (e) {
      if (seq === state.traceSeq) fill(box, errorBox(e.message));
      failed(e);
    }
  }
  function rankTable(rows, hitIds, label) {
    const row = (r) => el("tr", { class: hitIds.has(r.chunk_id) ? "in-hits" : null },
      el("td", { class: "num" }, r.rank), el("td", { class: "num" }, r.chunk_id), el("td", { class: "num" }, fmtNum(r.score)));
    const table = (rs) => el("table", { class: "table compact" },
      el("thead", {}, el("tr", {}, ["#", "Chunk", "Score"].map((h) => el("th", { scope: "col", class: "num" }, h)))),
      el("tbody", {}, rs.map(row)));
    return el("div", { class: "leg", "data-leg": label },
      el("h4", {}, label, el("span", { class: "muted small" }, ` ${rows.length} candidates`)),
      rows.length ? table(rows.slice(0, 10)) : el("p", { class: "muted small" }, "none"),
      rows.length > 10 ? el("details", {}, el("summary", {}, `All ${rows.length}`), table(rows.slice(10))) : null);
  }
  function timingBars(timings) {
    const entries = Object.entries(timings || {}).filter(([k]) => k !== "total");
    entries.sort(([a], [b]) => (STAGES.indexOf(a) + 1 || 99) - (STAGES.indexOf(b) + 1 || 99));
    const max = Math.max(1e-9, ...entries.map(([, v]) => Number(v) || 0));
    return el("div", { class: "timings", id: "trace-timings" },
      entries.map(([k, v]) => {
        const bar = el("span", { class: "bar" });
        bar.style.width = `${Math.max(0.5, (100 * (Number(v) || 0)) / max)}%`;
        return el("div", { class: "timing", "data-stage": k },
          el("span", { class: "stage" }, k), el("span", { class: "track" }, bar), el("span", { class: "num" }, fmtMs(v)));
      }),
      timings && timings.total != null ? el("p", { class: "muted small" }, `Total ${fmtMs(timings.total)}`) : null);
  }
  // the research loop: its decision, each step (queries, sources, evidence kept and
  // dropped, the judge's verdict and gaps, model calls, time), the stop reason and usage
  function agentSteps(a) {
    const d = a.decision || {}, u = a.usage || {}, b = a.budget || {};
    const calls = (s) => (s.model_calls || []).length
      ? ` · model calls ${(s.model_calls || []).length} (${(s.model_calls || []).filter((c) => !c.ok).length} unusable)` : "";
    const ms = (s) => (s.ms != null ? ` · ${fmtMs(s.ms)}` : "");
    const step = (s) => {
      if (s.kind === "plan") return el("li", { "data-kind": "plan" }, el("strong", {}, `Plan (${s.by})`), ms(s), calls(s),
        el("ol", { class: "small" }, (s.sub_questions || []).map((q) => el("li", {}, q))));
      if (s.kind === "route") return el("li", { "data-kind": "route" }, el("strong", {}, `Route (${s.by}): `),
        (s.sources || []).join(", "), el("span", { class: "muted small" }, ` scores ${JSON.stringify(s.scores || {})}`), calls(s));
      if (s.kind === "search") {
        if (s.error) return el("li", { "data-kind": "search", class: "warn" }, el("strong", {}, `Search ${s.source}: `), `“${s.query}” failed: ${s.error}`);
        const v = s.verdict || {};
        return el("li", { "data-kind": "search" }, el("strong", {}, `Search ${s.source}${s.seeded ? " (one-shot)" : ""}: `), `“${s.query}”`, ms(s),
          el("div", { class: "small" }, `kept ${(s.kept || []).map((k) => k.doc_key).join(", ") || "—"} · dropped ${(s.dropped || []).length}`),
          el("div", { class: v.enough ? "small" : "small warn" }, `judge (${v.by}): ${v.enough ? "enough" : "not enough"} — ${v.reason || ""}`, calls(s)));
      }
      if (s.kind === "rewrite") return el("li", { "data-kind": "rewrite" }, el("strong", {}, `Rewrite (${s.by || "heuristic"}): `),
        s.query ? `“${s.query}”` : "none", el("span", { class: "muted small" }, ` ${s.why || ""}`), calls(s));
      if (s.kind === "switch") return el("li", { "data-kind": "switch" }, el("strong", {}, "Switch source: "), `${s.from || ""} → ${s.to} (${s.why || ""})`);
      if (s.kind === "synthesize") return el("li", { "data-kind": "synthesize" }, el("strong", {}, "Synthesize: "),
        `${s.passages} passages, ${s.how}${s.abstained ? ", abstained" : ""}`, ms(s));
      return el("li", { "data-kind": s.kind }, s.text || s.kind);
    };
    return el("section", { id: "trace-agent" }, el("h3", { class: "sub" }, "Research steps"),
      el("p", { class: "muted small" }, `agent ${d.mode || "on"} · ${d.loop === false ? "one-shot" : "loop"} (${d.reason || ""}) · stop: ${a.stop_reason}`,
        u.steps != null ? ` · steps ${u.steps}/${b.max_steps} · model calls ${u.model_calls}/${b.max_model_calls ?? "∞"} · tokens ${u.tokens}/${b.max_tokens ?? "∞"} · ${u.seconds} s` : ""),
      el("ol", { class: "agent-steps" }, (a.steps || []).map(step)),
      (a.notes || []).length ? el("ul", { class: "notes" }, a.notes.map((n) => el("li", {}, n))) : null);
  }
  function renderTrace(t) {
    const hits = t.hits || [];
    const hitIds = new Set(hits.map((h) => h.chunk_id));
    const byChunk = new Map(hits.map((h) => [h.chunk_id, h]));
    const stages = Object.keys(hits.reduce((acc, h) => Object.assign(acc, h.ranks || {}), {}));
    const legs = Object.entries(t.legs || {}).map(([k, rows]) => rankTable(rows || [], hitIds, k));
    legs.push(rankTable(t.fused || [], hitIds, "fused (RRF)"));
    if (t.reranked) legs.push(rankTable(t.reranked, hitIds, "reranked"));
    const ctx = t.context;
    const gen = plainAnswer(t.generation);
    const plan = t.plan;
    const perm = t.permission || {};
    return el("article", { class: "card trace", id: "trace", "data-trace": t.id },
      el("div", { class: "title-row" }, el("h2", { id: "trace-heading", tabindex: "-1" }, t.question || t.id),
        el("a", { href: "#traces" }, "All traces")),
      el("p", { class: "muted small" }, `${t.kind} · mode ${t.mode} · ${fmtDate(t.created_at)} · tenant ${perm.tenant || "—"}`,
        perm.groups && perm.groups.length ? ` · groups ${perm.groups.join(", ")}` : "", " · ", el("span", { class: "mono" }, t.id)),
      el("section", {}, el("h3", { class: "sub" }, "Timings"), timingBars(t.timings_ms)),
      plan ? el("section", {}, el("h3", { class: "sub" }, "Query plan"),
        el("ol", { class: "small" }, (plan.queries || []).map((q) => el("li", {}, q))),
        plan.hyde ? el("p", { class: "small" }, el("strong", {}, "HyDE: "), plan.hyde) : null,
        (plan.notes || []).length ? el("ul", { class: "notes" }, plan.notes.map((n) => el("li", {}, n))) : null) : null,
      el("section", {}, el("h3", { class: "sub" }, "Candidates per stage"),
        el("p", { class: "muted small" }, "Highlighted rows made it into the final hits."),
        t.bm25_query ? el("p", { class: "small", id: "trace-bm25-query" },
          el("strong", {}, `BM25 terms (${(t.bm25_query.languages || []).join(", ")}): `),
          el("span", { class: "mono" }, (t.bm25_query.terms || []).join(" "))) : null,
        el("div", { class: "legs", id: "trace-legs" }, legs)),
      el("section", {}, el("h3", { class: "sub" }, "Hits"),
        hits.length ? el("table", { class: "table", id: "trace-hits" },
          el("thead", {}, el("tr", {}, ["#", "Chunk", "Document", "Score", ...stages.map((s) => `${s} rank`)].map((h) => el("th", { scope: "col" }, h)))),
          el("tbody", {}, hits.map((h) => el("tr", {},
            el("td", { class: "num" }, h.rank), el("td", { class: "num" }, h.chunk_id),
            el("td", {}, h.title || h.doc_key, crumbs(h) ? el("span", { class: "path" }, ` › ${crumbs(h)}`) : null),
            el("td", { class: "num" }, fmtNum(h.score)),
            stages.map((s) => el("td", { class: "num" }, h.ranks && h.ranks[s] != null ? h.ranks[s] : "—"))))))
          : el("p", { class: "muted" }, "No hits.")),
      ctx ? el("section", {}, el("h3", { class: "sub" }, "Packed context"),
        el("div", { class: "progress" }, el("meter", { min: 0, max: ctx.budget || 1, value: ctx.tokens || 0 }),
          ` ${ctx.tokens} of ${ctx.budget} tokens · ${(ctx.passages || []).length} passages`),
        el("table", { class: "table", id: "trace-context" },
          el("thead", {}, el("tr", {}, ["Chunk", "Document", "Tokens", "Merged chunks"].map((h) => el("th", { scope: "col" }, h)))),
          el("tbody", {}, (ctx.passages || []).map((p) => el("tr", {},
            el("td", { class: "num" }, p.chunk_id),
            el("td", {}, byChunk.has(p.chunk_id) ? byChunk.get(p.chunk_id).title : p.doc_key),
            el("td", { class: "num" }, p.tokens == null ? "—" : p.tokens),
            el("td", { class: "mono small" }, (p.merged_chunks || []).join(", ") || "—"))))),
        (ctx.dropped || []).length ? el("p", { class: "warn small" }, `Dropped for the budget: chunks ${ctx.dropped.join(", ")}`) : null) : null,
      t.agent ? agentSteps(t.agent) : null,
      gen ? el("section", {}, el("h3", { class: "sub" }, "Generation"),
        el("p", { class: "muted small" }, `Generator ${gen.generator || gen.model || "—"}`,
          gen.prompt_tokens != null ? ` · ${gen.prompt_tokens} prompt tokens` : "",
          gen.evidence != null ? ` · evidence ${fmtNum(gen.evidence)}` : "",
          gen.citations_valid === false ? " · some citations point outside the context" : ""),
        renderAnswer(gen)) : null);
  }

  // -- views and wiring ---------------------------------------------------------------
  function setView(name) {
    for (const v of ["signin", "ask", "documents", "traces"]) show($(`view-${v}`), v === name);
    for (const a of document.querySelectorAll("#nav a")) {
      if (a.dataset.view === name) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
  }
  function route(focus) {
    if (!state.me) { setView("signin"); return; }
    const h = decodeURIComponent(location.hash.slice(1));
    if (h.startsWith("trace/")) {
      setView("traces");
      showTrace(h.slice(6)).then(() => { const t = $("trace-heading"); if (focus && t) t.focus(); });
      loadTraces();
    } else if (h === "traces") {
      setView("traces");
      fill($("trace-detail"));
      loadTraces();
      if (focus) $("traces-title").focus();
    } else if (h === "documents") {
      setView("documents");
      loadDocuments();
      if (focus) $("docs-title").focus();
    } else {
      setView("ask");
      if (focus) $("ask-input").focus();
    }
  }

  function init() {
    for (const id of ["traces-title", "docs-title"]) $(id).setAttribute("tabindex", "-1");
    $("key-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const key = $("key-input").value.trim();
      const err = $("key-error");
      show(err, false);
      try {
        await useKey(key);
        $("key-input").value = "";
        route(true);
      } catch (e) {
        fill(err, e.status === 401 ? `That key was refused: ${e.message}` : e.message);
        show(err, true);
      }
    });
    $("sign-out").addEventListener("click", () => signOut());
    $("ask-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const q = $("ask-input").value.trim();
      if (!q) return;
      const mode = new FormData(ev.currentTarget).get("mode");
      $("ask-input").value = "";
      if (mode === "search") search(q); else ask(q, mode === "research" ? "on" : null);
    });
    $("ask-input").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        $("ask-form").requestSubmit();
      }
    });
    for (const r of document.querySelectorAll('#ask-form input[name="mode"]')) {
      r.addEventListener("change", () => {
        if (r.checked) $("ask-submit").textContent = r.value === "search" ? "Search" : r.value === "research" ? "Research" : "Ask";
      });
    }
    $("passage-close").addEventListener("click", closePassage);
    document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") closePassage(); });
    $("upload-form").addEventListener("submit", upload);
    $("docs-refresh").addEventListener("click", () => loadDocuments());
    $("traces-refresh").addEventListener("click", () => {
      loadTraces();
      const h = location.hash.slice(1);
      if (h.startsWith("trace/")) showTrace(decodeURIComponent(h.slice(6)));
    });
    window.addEventListener("hashchange", () => route(true));

    let saved = null;
    try { saved = localStorage.getItem(STORE); } catch (_) { /* storage off */ }
    if (!saved) { route(); $("key-input").focus(); return; }
    useKey(saved).then(() => route(), (e) => {
      if (e.status === 401) signOut(`Your saved key was refused: ${e.message}`);
      else {
        route();
        fill($("key-error"), `Could not check the saved key: ${e.message}`);
        show($("key-error"), true);
      }
    });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
