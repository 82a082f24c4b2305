"""A stored trace as readable text: one block per stage."""

from __future__ import annotations

from typing import Any


def _ranked(items: list[dict[str, Any]], n: int = 10) -> str:
    shown = ", ".join(f"#{x['rank']} c{x['chunk_id']} ({x['score']:.4g})" for x in items[:n])
    more = f" … +{len(items) - n}" if len(items) > n else ""
    return shown + more if items else "(none)"


def render_trace(t: dict[str, Any]) -> str:
    lines = [
        f"trace {t.get('id')}  {t.get('kind')}  {t.get('created_at', '')[:19]}",
        f"question: {t.get('question')}",
        f"collection: {t.get('collection')}  mode: {t.get('mode')}",
    ]
    perm = t.get("permission") or {}
    lines.append(
        f"permission filter: tenant={perm.get('tenant')} groups={','.join(perm.get('groups', [])) or '-'}"
    )
    if t.get("filters"):
        lines.append(f"filters: {t['filters']}")
    plan = t.get("plan") or {}
    if plan and (plan.get("queries") or plan.get("hyde")):
        lines.append(f"queries: {plan.get('queries')}")
        if plan.get("question") != t.get("question"):
            lines.append(f"rewritten: {plan.get('question')}")
        if plan.get("hyde"):
            lines.append(f"hyde: {plan['hyde'][:200]}")
        for note in plan.get("notes", []):
            lines.append(f"note: {note}")
    lines.append("")
    bq = t.get("bm25_query")
    if bq:
        lines.append(
            f"bm25 query ({', '.join(bq.get('languages', []))}): {' '.join(bq.get('terms', []))}"
        )
    for name, items in (t.get("legs") or {}).items():
        lines.append(f"{name} leg ({len(items)}): {_ranked(items)}")
    if t.get("fused"):
        lines.append(f"fused (RRF) ({len(t['fused'])}): {_ranked(t['fused'])}")
    if t.get("reranked"):
        lines.append(f"reranked: {_ranked(t['reranked'])}")
    lines.append("hits:")
    for h in t.get("hits", []):
        where = " › ".join([h.get("title") or h.get("doc_key", ""), *h.get("heading_path", [])])
        lines.append(
            f"  [{h['rank']}] c{h['chunk_id']} {where}  {h['score']:.4g}  {h.get('ranks')}"
        )
    ctx = t.get("context")
    if ctx:
        lines.append(
            f"context: {len(ctx['passages'])} passages, {ctx['tokens']}/{ctx['budget']} tokens"
            + (f", dropped {ctx['dropped']}" if ctx.get("dropped") else "")
        )
        for p in ctx["passages"]:
            lines.append(f"  c{p['chunk_id']} {p['doc_key']} {p.get('tokens')} tokens")
    gen = t.get("generation")
    if gen:
        lines.append(
            f"generator: {gen.get('model') or gen.get('generator')}  prompt tokens: "
            f"{gen.get('prompt_tokens')}  abstained: {gen.get('abstained')} "
            f"(evidence {gen.get('evidence')})"
        )
        lines.append(f"answer: {gen.get('answer')}")
        for c in gen.get("citations", []):
            ok = "valid" if c.get("valid") else "INVALID"
            lines.append(f"  [{c['number']}] c{c['chunk_id']} {c.get('title')} ({ok})")
        for c in gen.get("claims", []):
            mark = "supported" if c.get("supported") else "UNSUPPORTED"
            lines.append(f"  claim {mark} {c.get('support')}: {c.get('text', '')[:100]}")
        for n in gen.get("notes", []):
            lines.append(f"  note: {n}")
    if t.get("agent"):
        lines += agent_lines(t["agent"])
    timings = t.get("timings_ms") or {}
    if timings:
        lines.append("timings (ms): " + ", ".join(f"{k} {v:.1f}" for k, v in timings.items()))
    return "\n".join(lines)


def agent_lines(a: dict[str, Any]) -> list[str]:
    """The research loop of a trace: decision, each step, stop reason, usage."""
    d = a.get("decision") or {}
    u = a.get("usage") or {}
    b = a.get("budget") or {}
    out = [
        "",
        f"agent: {d.get('mode', 'on')}  loop: {d.get('loop', True)}  ({d.get('reason', '')})",
    ]
    if u:
        out.append(
            f"  stop: {a.get('stop_reason')}  steps {u.get('steps')}/{b.get('max_steps')}  "
            f"model calls {u.get('model_calls')}/{b.get('max_model_calls')}  tokens "
            f"{u.get('tokens')}/{b.get('max_tokens')}  {u.get('seconds')} s/{b.get('max_seconds')} s"
        )
    else:
        out.append(f"  stop: {a.get('stop_reason')}")
    for n, q in enumerate(a.get("sub_questions", [])):
        out.append(f"  sub-question {n}: {q}")
    for i, s in enumerate(a.get("steps", []), 1):
        kind = s.get("kind")
        calls = s.get("model_calls") or []
        bad = sum(not c.get("ok") for c in calls)
        llm = f"  [model calls {len(calls)}, {bad} unusable]" if calls else ""
        ms = f"  {s['ms']:.0f} ms" if isinstance(s.get("ms"), (int, float)) else ""
        if kind == "plan":
            out.append(f"  {i}. plan ({s.get('by')}): {s.get('sub_questions')}{llm}{ms}")
        elif kind == "route":
            out.append(
                f"  {i}. route ({s.get('by')}): {s.get('sources')}  scores {s.get('scores')}{llm}{ms}"
            )
        elif kind == "search":
            if s.get("error"):
                out.append(
                    f"  {i}. search {s.get('source')}: {s.get('query')!r} FAILED: {s['error']}"
                )
                continue
            v = s.get("verdict") or {}
            kept = ", ".join(f"c{k['chunk_id']}" for k in s.get("kept", [])) or "-"
            out.append(
                f"  {i}. search {s.get('source')}{' (one-shot)' if s.get('seeded') else ''}: "
                f"{s.get('query')!r}{ms}"
            )
            out.append(f"     kept {kept}; dropped {len(s.get('dropped', []))}")
            out.append(
                f"     judge ({v.get('by')}): {'enough' if v.get('enough') else 'not enough'}"
                f" — {v.get('reason')}{llm}"
            )
        elif kind == "rewrite":
            out.append(
                f"  {i}. rewrite ({s.get('by', 'heuristic')}): {s.get('query')!r} — {s.get('why')}{llm}"
            )
        elif kind == "switch":
            out.append(f"  {i}. switch source {s.get('from', '')} → {s.get('to')}: {s.get('why')}")
        elif kind == "synthesize":
            out.append(
                f"  {i}. synthesize ({s.get('how')}): {s.get('passages')} passages, "
                f"abstained {s.get('abstained')}{ms}"
            )
        else:
            out.append(f"  {i}. {kind}: {s.get('text', '')}")
    for n in a.get("notes", []):
        out.append(f"  note: {n}")
    return out
