"""Build the multi-hop golden set (questions.jsonl) from ../shared/data; run once, then
commit the output. Written, with its hand-written questions, before any agent measurement.

Kinds (see README.md): ``bridge`` and ``two-part`` hand-written over two SQuAD passages;
``composed`` = two answerable SQuAD dev questions of different passages of one article
joined into one question; ``unanswerable`` = two unanswerable SQuAD questions joined
(SQuAD 2.0 wrote them to resemble their passage); ``two-source`` = a SQuAD question and a
question about a file of ``documents/`` (Wikipedia "Duck" HTML, a Word sample) joined, so
the answer needs both sources.

Deterministic: pairs are chosen by SHA-256 of the question ids.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "squad2-dev"
OUT = Path(__file__).with_name("questions.jsonl")


def sq(pid: str, *answers: str) -> dict:
    return {"source": "squad", "passage_id": pid, "answers": list(answers)}


def doc(name: str, quote: str, *answers: str) -> dict:
    return {"source": "documents", "doc": name, "quote": quote, "answers": list(answers)}


HAND = [
    ("bridge", "What was the name of the Viking ruler with whom Charles III of West Francia made the treaty of Saint-Clair-sur-Epte, and from which countries did the raiders he led come?",
     [sq("Normans__3", "Rollo"), sq("Normans__0", "Denmark, Iceland and Norway", "Denmark")]),
    ("two-part", "Which king of West Francia did the Norman leader Rollo swear fealty to, and in what year did the Duchy of Normandy begin as a fiefdom?",
     [sq("Normans__0", "Charles III", "King Charles III"), sq("Normans__3", "911")]),
    ("bridge", "The Norman adventurer who drove the Byzantines out of southern Italy had a son; which city did that son besiege in 1107?",
     [sq("Normans__11"), sq("Normans__12", "Dyrrachium")]),
    ("two-part", "Which island did Richard the Lion-hearted conquer in 1191, and for how many years did that island stay under Western European domination?",
     [sq("Normans__26", "Cyprus"), sq("Normans__25", "380 years", "380")]),
    ("bridge", "The Norman noble who conquered Lanzarote had a nephew; to whom did the nephew sell the rights to the islands?",
     [sq("Normans__28"), sq("Normans__29", "Enrique Pérez de Guzmán")]),
    ("two-part", "At which abbey was the system of denoting notes by letters developed, and under which Norman abbot did monks of Saint-Evroul flee to southern Italy?",
     [sq("Normans__37", "Fécamp", "Fécamp Abbey"), sq("Normans__38", "Robert de Grantmesnil")]),
    ("two-part", "Who commissioned the Bayeux Tapestry, and what was the unique style of architecture the Normans initiated in the Kingdom of Sicily called?",
     [sq("Normans__35", "Odo", "Odo, the Bishop of Bayeux"), sq("Normans__32", "Norman-Arab architecture", "Norman-Arab")]),
    ("two-part", "Whose sister Emma married King Ethelred II, and at which battle was King Harold II killed in 1066?",
     [sq("Normans__14", "Duke Richard II of Normandy", "Richard II"), sq("Normans__16", "Battle of Hastings", "Hastings")]),
    ("two-part", "In what year did William invade Scotland, and which king of Scotland was instrumental in introducing Normans and Norman culture to Scotland?",
     [sq("Normans__19", "1072"), sq("Normans__20", "King David I", "David I")]),
    ("two-part", "Who led the Normans of Edessa against the Turks in the 1060s, and who led the 8,000 Norman troops of the Armenian general Philaretus Brachamius?",
     [sq("Normans__8", "Robert Crispin"), sq("Normans__9", "Raimbaud")]),
    ("two-part", "Which legal systems preserve the customary law of Normandy today, and what is the most famous work of Norman art?",
     [sq("Normans__30", "Jersey and Guernsey", "Jersey"), sq("Normans__35", "Bayeux Tapestry", "the Bayeux Tapestry")]),
    ("two-part", "Where did the Normans invade Ireland in 1169, and where did William meet up with his fleet when he invaded Scotland?",
     [sq("Normans__18", "Bannow Bay"), sq("Normans__19", "Abernethy")]),
    ("two-part", "Under which duke was the Duchy of Normandy forged into a cohesive principality, and which river bounded the lands the treaty offered Rollo on one side?",
     [sq("Normans__1", "Richard I of Normandy", "Richard I"), sq("Normans__3", "Epte", "river Epte")]),
    ("bridge", "Edward the Confessor made Ralph the Timid earl of which place, and with which people did that earl have to war when defending the Marches?",
     [sq("Normans__15", "Hereford"), sq("Normans__21", "Welsh", "the Welsh")]),
]

SOURCE2 = [  # a SQuAD question joined with a question about documents/
    ("Which university first debunked the myth that a duck's quack does not echo?",
     doc("docling__wiki_duck.html", "University of Salford", "University of Salford")),
    ("On which continent are ducks not found?",
     doc("docling__wiki_duck.html", "every continent except Antarctica", "Antarctica")),
    ("To which biological order do all ducks belong?",
     doc("docling__wiki_duck.html", "biological order", "Anseriformes")),
    ("What is a male duck called?",
     doc("docling__wiki_duck.html", "A male is called a", "drake")),
    ("From which Old English word does the word duck come?",
     doc("docling__wiki_duck.html", "comes from", "dūce")),
    ("How many calories per portion do berries have in the summer activities document?",
     doc("docling__word_sample.docx", "Calories per portion", "150")),
    ("Which predator catches ducks in flight using its speed and strength?",
     doc("docling__wiki_duck.html", "peregrine falcon", "peregrine falcon")),
    ("What does the phrase a sitting duck mean?",
     doc("docling__wiki_duck.html", "sitting duck", "an easy target", "easy target")),
]


def h(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()


def lower_first(q: str) -> str:
    return q[0].lower() + q[1:] if q[:2] != q[:2].upper() else q


def join(a: str, b: str, i: int) -> str:
    a, b = a.strip().rstrip("?"), b.strip()
    return f"{a}? {b}" if i % 2 else f"{a}, and {lower_first(b)}"


def main() -> None:
    qa = [json.loads(x) for x in (DATA / "qa.jsonl").read_text().splitlines() if x.strip()]
    used_passages = {g["passage_id"] for _, _, gs in HAND for g in gs}
    good = [
        q for q in qa
        if not q["is_impossible"] and q["answers"] and max(len(a) for a in q["answers"]) <= 40
        and q["passage_id"] not in used_passages and len(q["question"].split()) >= 6
    ]
    impossible = [q for q in qa if q["is_impossible"] and len(q["question"].split()) >= 6]
    by_article: dict[str, list[dict]] = {}
    for q in sorted(good, key=lambda q: h(q["id"])):
        by_article.setdefault(q["passage_id"].rsplit("__", 1)[0], []).append(q)
    rows = []
    for kind, question, gold in HAND:
        rows.append({"kind": kind, "question": question, "gold": gold})
    # composed: 4 pairs per article (32), different passages
    for art, qs in sorted(by_article.items()):
        taken, n = set(), 0
        for a in qs:
            if n == 4:
                break
            for b in qs:
                if a is b or a["passage_id"] == b["passage_id"] or {a["passage_id"], b["passage_id"]} & taken:
                    continue
                rows.append({
                    "kind": "composed",
                    "question": join(a["question"], b["question"], len(rows)),
                    "gold": [sq(a["passage_id"], *a["answers"]), sq(b["passage_id"], *b["answers"])],
                    "from": [a["id"], b["id"]],
                })
                taken |= {a["passage_id"], b["passage_id"]}
                n += 1
                break
    # unanswerable: 12 pairs of SQuAD unanswerable questions, one per passage pair
    imp = sorted(impossible, key=lambda q: h(q["id"]))
    seen: set[str] = set()
    pairs = []
    for a in imp:
        if len(pairs) == 12:
            break
        if a["passage_id"] in seen:
            continue
        art = a["passage_id"].rsplit("__", 1)[0]
        b = next((x for x in imp if x is not a and x["passage_id"].startswith(art + "__")
                  and x["passage_id"] != a["passage_id"] and x["passage_id"] not in seen), None)
        if b is None:
            continue
        seen |= {a["passage_id"], b["passage_id"]}
        pairs.append((a, b))
    for a, b in pairs:
        rows.append({
            "kind": "unanswerable",
            "question": join(a["question"], b["question"], len(rows)),
            "gold": [], "from": [a["id"], b["id"]],
        })
    # two-source: a SQuAD question + a documents question
    src = [q for q in sorted(good, key=lambda q: h("2src" + q["id"]))][: len(SOURCE2)]
    for (dq, dgold), a in zip(SOURCE2, src, strict=True):
        rows.append({
            "kind": "two-source",
            "question": join(a["question"], dq, len(rows)),
            "gold": [sq(a["passage_id"], *a["answers"]), dgold],
            "from": [a["id"]],
        })
    with OUT.open("w") as f:
        for i, r in enumerate(rows, 1):
            f.write(json.dumps({"id": f"mh{i:03d}", **r}, ensure_ascii=False) + "\n")
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    print(len(rows), kinds)


if __name__ == "__main__":
    main()
