"""`kb eval`: retrieval quality on a question set, beside the LlamaIndex starter pipeline.

DIR holds `docs/` and `qa.jsonl` (id, lang, question, answerable, gold[{file, page, quote}];
a follow-up also has `history`, its earlier turns [{question, answer}], oldest first); a set
whose documents are elsewhere (the follow-up set asks about public2's) is given them as `docs`.
A follow-up is searched for as the assistant reads it with its earlier questions
(`Assistant.read`, answer.rewrite), and again alone as the control (`ours_alone`). A set's
reference fields (`standalone`, `answer`) are never read.
The documents are ingested into a temporary store, every question is retrieved, and per
language (and per question `kind`, when the set has kinds; per direction beside the same facts
asked in the document's language, for a cross-language set: `crosslang.py`) we report hit@1,
hit@5, hit@10 and MRR@10 over answerable questions; in-window recall, the share of answerable
questions with a gold quote in a passage the packer puts into the prompt (`assistant.window`);
and abstention accuracy over all questions, with its two errors: answerable questions refused
and unanswerable ones answered. The LlamaIndex starter gets the same window: its top chunks, best
first, packed into the same token budget. A report also names the CPU it ran on (`host`) and
keeps each question's outcome (`outcomes`), what a record (bench/eval_*.json) holds a later run
to (`record.py`).

A passage hits a gold item when it comes from the gold file (for PDFs, its page span includes
the gold page) and contains the gold quote once both have all whitespace removed and are
NFKC-casefolded, or holds at least 80% of the quote as one contiguous run.

    quote_hit("年休假 5天", "职工累计工作已满1年不满10年的，年休假5天；") -> True
"""

from __future__ import annotations

import json
import re
import tempfile
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Protocol

from assistant.answer import Assistant, should_abstain
from assistant.cite import parse_markers
from assistant.evaluation.crosslang import direction, gate_record, is_crosslang, mirrors
from assistant.evaluation.record import as_recorded, this_cpu
from assistant.window import fill_window, snapshot_neighbours, window_counter
from core.config import Settings
from core.errors import KbError
from core.types import Turn
from ingest.pipeline import ingest_paths
from store.store import Store

_SPACE = re.compile(r"\s+")
METRICS = ("hit@1", "hit@5", "hit@10", "mrr@10", "in_window", "abstain_acc")
# Abstention's two errors, as shares: of the answerable questions, of the unanswerable ones.
ERRORS = ("refused", "answered")


def normalise(text: str) -> str:
    """normalise("Annual  Leave\\n") -> "annualleave" """
    return _SPACE.sub("", unicodedata.normalize("NFKC", text).casefold())


def quote_hit(quote: str, text: str) -> bool:
    q, t = normalise(quote), normalise(text)
    if not q:
        return False
    if q in t:
        return True
    match = SequenceMatcher(None, q, t, autojunk=False).find_longest_match(0, len(q), 0, len(t))
    return match.size >= 0.8 * len(q)


class Parts(Protocol):
    """A store and an assistant over it, opened for a settings object (ui/wiring.py's
    `open_services` is one)."""

    store: Store
    assistant: Assistant

    def close(self) -> None: ...


Opener = Callable[[Settings], Parts]


@dataclass(frozen=True)
class Hit:
    file: str
    page: int | None
    page_end: int | None
    text: str


def passage_hits(passage: Hit, gold: Iterable[dict[str, Any]]) -> bool:
    for item in gold:
        if Path(passage.file).name != Path(item["file"]).name:
            continue
        page = item.get("page")
        if page is not None and passage.page is not None:
            if not passage.page <= page <= (passage.page_end or passage.page):
                continue
        if quote_hit(item["quote"], passage.text):
            return True
    return False


@dataclass(frozen=True)
class Outcome:
    """One question's result: abstained or not, the ranked passages, the packed window."""

    abstained: bool
    ranked: list[Hit]
    window: list[Hit]


def first_gold(q: dict[str, Any], outcome: Outcome) -> int:
    """The rank of the first passage of the top 10 that holds q's gold; 0: none does."""
    ranked = outcome.ranked[:10]
    return next((i for i, p in enumerate(ranked, 1) if passage_hits(p, q["gold"])), 0)


def gold_in_window(q: dict[str, Any], outcome: Outcome) -> bool:
    return any(passage_hits(p, q["gold"]) for p in outcome.window)


def _metrics(subset: Sequence[dict[str, Any]], results: dict[str, Outcome]) -> dict[str, Any]:
    answerable = [q for q in subset if q["answerable"]]
    unanswerable = len(subset) - len(answerable)
    sums = dict.fromkeys(METRICS, 0.0)
    for q in answerable:
        outcome = results[q["id"]]
        first = first_gold(q, outcome)
        for k in (1, 5, 10):
            sums[f"hit@{k}"] += 1.0 if first and first <= k else 0.0
        sums["mrr@10"] += 1.0 / first if first else 0.0
        sums["in_window"] += gold_in_window(q, outcome)
    refused = sum(1 for q in answerable if results[q["id"]].abstained)
    answered = sum(1 for q in subset if not q["answerable"] and not results[q["id"]].abstained)
    out: dict[str, Any] = {  # None: no answerable question to score
        m: round(sums[m] / len(answerable), 3) if answerable else None
        for m in METRICS
        if m != "abstain_acc"
    }
    out["abstain_acc"] = round((len(subset) - refused - answered) / max(len(subset), 1), 3)
    out["refused"] = round(refused / max(len(answerable), 1), 3)
    out["answered"] = round(answered / max(unanswerable, 1), 3)
    out["counts"] = f"refused {refused}/{len(answerable)}, answered {answered}/{unanswerable}"
    out["questions"] = len(subset)
    out["answerable"] = len(answerable)
    return out


def question_outcomes(
    questions: Sequence[dict[str, Any]], results: dict[str, Outcome]
) -> dict[str, dict[str, Any]]:
    """Each question's outcome as a record keeps it (`record.as_recorded`), by id."""
    return {
        q["id"]: as_recorded(
            q["answerable"],
            q["lang"],
            first_gold(q, results[q["id"]]) or None,
            gold_in_window(q, results[q["id"]]),
            results[q["id"]].abstained,
        )
        for q in questions
    }


def score(
    questions: Sequence[dict[str, Any]], results: dict[str, Outcome]
) -> dict[str, dict[str, Any]]:
    """Per-language metrics (plus "all"), each with a "kinds" breakdown when the questions
    have a `kind`."""
    out: dict[str, dict[str, Any]] = {}
    for lang in sorted({q["lang"] for q in questions}) + ["all"]:
        subset = [q for q in questions if lang in ("all", q["lang"])]
        out[lang] = _metrics(subset, results)
        kinds = sorted({q["kind"] for q in subset if q.get("kind")})
        if kinds:
            out[lang]["kinds"] = {
                kind: _metrics([q for q in subset if q.get("kind") == kind], results)
                for kind in kinds
            }
    return out


def load_questions(path: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]


def eval_settings(settings: Settings, store_dir: Path) -> Settings:
    """The settings of an evaluation store: its own folder, no folder groups."""
    settings = settings.with_store(store_dir)
    return replace(settings, ingest=replace(settings.ingest, folder_groups={}))


def evaluate_ours(
    parts: Parts,
    docs: Path,
    questions: Sequence[dict[str, Any]],
    on_result: Callable[[str, Any], None] | None = None,
    history: bool = True,
) -> dict[str, Outcome]:
    """Each question's outcome over the documents `docs` (ingested first); a follow-up read
    with its earlier questions, or with `history` False, alone (the control)."""
    settings = parts.store.settings
    ingest_paths(parts.store, [docs])
    retriever = parts.assistant.retriever
    count = window_counter(settings)
    top_k = settings.retrieve.top_k
    results: dict[str, Outcome] = {}
    for q in questions:
        earlier = earlier_turns(q) if history else []
        reading = parts.assistant.read(q["question"], earlier)
        retrieval = retriever.retrieve(
            reading.question,
            groups=settings.ingest.default_groups,
            k=max(10, top_k),
            context=reading.context,
        )
        window = fill_window(
            retrieval.passages[:top_k],
            q["question"],
            retrieval.lang,
            count,
            settings,
            snapshot_neighbours(retriever.snapshot()),
        )
        results[q["id"]] = Outcome(
            should_abstain(retrieval, settings),
            [hit_of(p) for p in retrieval.passages[:10]],
            [hit_of(p) for p in window],
        )
        if on_result:
            on_result(q["id"], retrieval)
    return results


def earlier_turns(item: dict[str, Any]) -> list[Turn]:
    """An item's earlier turns, for reading it as a follow-up: their questions only (what
    retrieval reads; their answers are not needed)."""
    return [Turn(turn["question"], "") for turn in item.get("history", [])]


def hit_of(p: Any) -> Hit:
    return Hit(p.file, p.page, p.page_end, p.text)


def citation_precision(
    assistant: Assistant,
    questions: Sequence[dict[str, Any]],
    lang: str | None = None,
) -> dict[str, float | None]:
    """Ask every answerable question (of `lang`) through the model; the share of [n] markers
    whose passage holds the gold fact (the gold quote, by the hit rule above)."""
    groups = assistant.settings.ingest.default_groups
    counts = dict.fromkeys(("answered", "raw_markers", "raw_correct", "markers", "correct"), 0)

    def tally(text: str, passages: Sequence[Any], gold: Any, prefix: str) -> None:
        for marker in parse_markers(text):
            for n in marker.numbers:
                counts[prefix + "markers"] += 1
                if 1 <= n <= len(passages):
                    p = passages[n - 1]
                    counts[prefix + "correct"] += passage_hits(
                        Hit(p.file, p.page, p.page_end, p.text), gold
                    )

    for q in questions:
        if not q["answerable"] or (lang and q["lang"] != lang):
            continue
        answer = assistant.ask(q["question"], groups, earlier_turns(q))
        if answer.mode not in ("generated", "fallback"):
            continue
        counts["answered"] += 1
        tally(answer.raw_answer, answer.passages, q["gold"], "raw_")
        if answer.mode == "generated":  # a fallback shows no marker of the model's
            tally(answer.answer, answer.passages, q["gold"], "")

    def ratio(part: int, whole: int) -> float | None:
        return round(part / whole, 3) if whole else None  # no markers: no precision

    return {
        "answered": counts["answered"],
        "markers": counts["raw_markers"],
        "citation_precision": ratio(counts["raw_correct"], counts["raw_markers"]),
        "markers_after_check": counts["markers"],
        "citation_precision_after_check": ratio(counts["correct"], counts["markers"]),
    }


def by_direction(
    questions: Sequence[dict[str, Any]],
    outcomes: dict[str, Outcome],
    control: Sequence[dict[str, Any]],
    controls: dict[str, Outcome],
) -> dict[str, dict[str, Any]]:
    """A cross-language set's metrics per direction ("en→zh"), each beside its control: the
    `mirror_of` questions (`crosslang.mirrors`) and their outcomes from the same store."""
    out: dict[str, dict[str, Any]] = {}
    for way in sorted({direction(q) for q in questions}):
        subset = [q for q in questions if direction(q) == way]
        mirrored = [c for c in control if c["direction"] == way]
        out[way] = {"cross": _metrics(subset, outcomes)}
        if mirrored:
            out[way]["control"] = _metrics(mirrored, controls)
    return out


def set_docs(set_dir: Path, docs: Path | None = None) -> Path:
    """A set's documents: `docs`, else SET_DIR/docs; KbError naming what to pass when the
    folder is missing."""
    folder = docs or set_dir / "docs"
    if not folder.is_dir():
        raise KbError(f"{folder}: no such folder of documents; pass --docs DIR (the follow-up "
                      "set asks about ../shared/eval/public2/docs)")
    return folder


def score_in(
    parts: Parts,
    folder: Path,
    questions: Sequence[dict[str, Any]],
    results: dict[str, Outcome] | None = None,
) -> dict[str, Any]:
    """Our figures for `questions` over the store of `parts` (the documents `folder` ingested
    into it first, when they are not yet): per language ("ours"), per direction beside the
    control with the gates' readings (a cross-language set), the follow-ups alone beside
    themselves (a follow-up set), and each question's outcome ("outcomes"); `results`, when
    given, gets each question's `Outcome`."""
    settings = parts.store.settings
    out: dict[str, Any] = {}
    kept: dict[str, dict[str, Any]] = {}  # each system's outcomes, by question
    readings: dict[str, dict[str, float]] = {}
    outcomes = evaluate_ours(
        parts, folder, questions, lambda qid, r: readings.__setitem__(
            qid, {**r.bridge_gate, **{f"space_{k}": v for k, v in r.space_gate.items()}})
    )
    out["ours"] = score(questions, outcomes)
    kept["ours"] = question_outcomes(questions, outcomes)
    if results is not None:
        results.update(outcomes)
    if is_crosslang(questions):  # by direction, beside the same facts asked alike
        control = mirrors(questions, folder)
        controls = evaluate_ours(parts, folder, control) if control else {}
        out["directions"] = by_direction(questions, outcomes, control, controls)
        out["gate"] = gate_record(settings, readings)
        kept["control"] = question_outcomes(control, controls)
    if any(q.get("history") for q in questions):  # the control: follow-ups alone
        alone = evaluate_ours(parts, folder, questions, history=False)
        out["ours_alone"] = score(questions, alone)
        kept["ours_alone"] = question_outcomes(questions, alone)
    out["outcomes"] = kept
    return out


def run_eval(
    settings: Settings,
    set_dir: Path,
    open_parts: Opener,
    baseline: bool = True,
    llm: bool = False,
    llm_lang: str | None = None,
    docs: Path | None = None,
    library: Sequence[Path] = (),
) -> dict[str, Any]:
    """Ingest the set's documents (`set_docs`) into a temporary store opened by `open_parts`,
    score our retrieval (and, with `llm`, the model's citations), then the starter's; with
    `library`, the set again in a store that also holds those folders' documents
    (`library.py`), reported as "library"."""
    from assistant.evaluation.library import in_library

    questions = load_questions(set_dir / "qa.jsonl")
    folder = set_docs(set_dir, docs)
    report: dict[str, Any] = {"set": str(set_dir), "host": this_cpu()}
    with tempfile.TemporaryDirectory(prefix="kb-eval-") as tmp:
        parts = open_parts(eval_settings(settings, Path(tmp)))
        try:
            own = score_in(parts, folder, questions)
            if llm:
                report["citations"] = citation_precision(parts.assistant, questions, llm_lang)
        finally:
            parts.close()
    kept = own.pop("outcomes")
    report.update(own)
    if library:
        report["library"] = in_library(settings, open_parts, folder, questions, library)
    if baseline:
        from assistant.evaluation.baseline import evaluate_llamaindex_starter

        report["llamaindex_starter"] = score(
            questions, evaluate_llamaindex_starter(settings, folder, questions)
        )
    report["outcomes"] = kept
    return report
