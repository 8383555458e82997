"""BENCHMARKS.md's section and goals for knowledge owners (issue 27): approved answers, from
`python -m bench approved` (bench/approved_match.py), and the folder sync pass, from
`python -m bench sync` (bench/sync_unchanged.py); their goals are in bench/report_goals.py."""

from __future__ import annotations

from bench.recorded import Recorded
from bench.report_sections import para, table

PROBES = [(f"{s} {lang}: {kind}", f"{s}/{lang}/probe/{kind}")
          for s in ("public", "public2") for lang in ("en", "zh")
          for kind in ("paraphrase", "typo")]


def owners(rec: Recorded) -> list[str]:
    approved = rec.report("approved")
    quality, latency = approved["quality"], approved["latency"]
    shipped, unchecked = quality["at_shipped"], quality["without_wording_check"]
    groups = shipped["by_group"]
    bars = quality["shipped_thresholds"]
    sync = rec.report("sync_unchanged")
    rows = [[label, f"{groups[key]['hit']}/{groups[key]['n']}"] for label, key in PROBES
            if key in groups]
    return [
        "## Knowledge owners", "",
        *para(f"Approved answers: {quality['approved_answers']} answers approved over both "
              "public sets' documents; each probe (a paraphrase or typo of an approved question) "
              "should get its answer, and none of the other "
              f"{shipped['questions_asked']} questions asked (the {shipped['unanswerable_asked']} "
              f"unanswerable among them) any: {shipped['false_matches']} false matches, "
              f"{shipped['probe_hits']}/{shipped['probes']} probes hit, at lexical ≥ "
              f"{bars['lexical']['en']} / dense ≥ {bars['dense']['en']} (English) and "
              f"{bars['lexical']['zh']} / {bars['dense']['zh']} (Chinese) and the wording check "
              f"(without it, at the same bars: {unchecked['probe_hits']}/{unchecked['probes']} "
              f"hit and {unchecked['false_matches']} false matches; docs/owners.md):"),
        *table(["probes", "hit"], rows),
        *para(f"Matching a question against {latency['approved_answers']:,} approved answers "
              f"({latency['phrasings']:,} phrasings), its vector given: p50 "
              f"{latency['p50_ms']} ms, p95 {latency['p95_ms']} ms."),
        rec.run_line("approved"), "",
        *para(f"A sync pass over {sync['files']:,} unchanged files (ledger rows seeded "
              f"directly): median {sync['pass_s']['median']} s, slowest "
              f"{sync['pass_s']['max']} s of {sync['passes']}; `kb ingest` over the same folder "
              f"{sync['kb_ingest_unchanged_s']} s "
              f"({sync['kb_ingest_unchanged_s'] / sync['pass_s']['median']:.1f}× the pass)."),
        rec.run_line("sync_unchanged"), "",
    ]

