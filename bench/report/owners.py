"""The figures of BENCHMARKS.md's section on approved answers and folder sync, and of its detail
in docs/benchmarks-history.md: approved answers, from `python -m bench approved`
(bench/quality/approved_match.py), and the folder sync pass, from `python -m bench sync`
(bench/ingest/sync_unchanged.py)."""

from __future__ import annotations

from bench.report.recorded import Recorded
from bench.report.sections import rows

PROBES = [(f"{s} {lang}: {kind}", f"{s}/{lang}/probe/{kind}")
          for s in ("public", "public2") for lang in ("en", "zh")
          for kind in ("paraphrase", "typo")]


def owners(rec: Recorded) -> dict[str, str]:
    approved = rec.report("approved")
    quality, latency = approved["quality"], approved["latency"]
    shipped, unchecked = quality["at_shipped"], quality["without_wording_check"]
    groups = shipped["by_group"]
    bars = quality["shipped_thresholds"]
    sync = rec.report("sync_unchanged")
    return {
        "approved": str(quality["approved_answers"]), "asked": str(shipped["questions_asked"]),
        "unanswerable": str(shipped["unanswerable_asked"]),
        "false": str(shipped["false_matches"]), "hits": str(shipped["probe_hits"]),
        "probes": str(shipped["probes"]),
        **{f"{bar}_{lang}": str(bars[bar][lang]) for bar in ("lexical", "dense")
           for lang in ("en", "zh")},
        "unchecked_hits": str(unchecked["probe_hits"]),
        "unchecked_false": str(unchecked["false_matches"]),
        "probe_rows": rows([[label, f"{groups[key]['hit']}/{groups[key]['n']}"]
                            for label, key in PROBES if key in groups]),
        "answers": f"{latency['approved_answers']:,}", "phrasings": f"{latency['phrasings']:,}",
        "p50": str(latency["p50_ms"]), "p95": str(latency["p95_ms"]),
        "run_approved": rec.run_line("approved"),
        "sync_files": f"{sync['files']:,}", "sync_median": str(sync["pass_s"]["median"]),
        "sync_max": str(sync["pass_s"]["max"]), "sync_passes": str(sync["passes"]),
        "sync_ingest": str(sync["kb_ingest_unchanged_s"]),
        "sync_ratio": f"{sync['kb_ingest_unchanged_s'] / sync['pass_s']['median']:.1f}×",
        "run_sync": rec.run_line("sync_unchanged"),
    }
