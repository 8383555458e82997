"""`python -m bench.serving.gpu_serve prepare`: kb's retrieval and packing over the dev sets ->
prompts.json, counted with the served model's tokenizer (no GPU, no model server needed).

Workloads (their answer lengths: MAX_TOKENS in bench/serving/gpu_serve/load.py):
  rag        each dev question kb answers with the model (abstentions are never sent), asked by
             5 employees in different words (a greeting, "quick question", thanks, ...), each
             wording retrieved and packed by kb: passages in document order (assistant/pack.py)
  rag_rel    the same packed passages shown best-first, as kb packed them before: the "before"
             of the stable order
  rag_once   each dev question once, in its own words (no rewording)
  short      a one-line question alone, 64 tokens out
  medium     a one-line request for a detailed explanation, 400 tokens out
  multi      kb's system rules, earlier turns (questions and passage-quoting answers) up to a
             1,200-token prompt, then a follow-up question, 150 tokens out
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
from pathlib import Path
from typing import Any

from assistant.answer import should_abstain
from assistant.llm.tokens import LocalTokenCounter
from assistant.pack import pack, plan_budget, render_passages
from assistant.prompt import SYSTEM, build_messages
from assistant.retrieve.retriever import Retriever
from bench.serving.gpu_serve.load import MAX_TOKENS
from core.config import LlmSettings, Settings, load_settings
from core.offline import offline_environment
from core.text import Lang
from ingest.pipeline import ingest_paths
from store.store import open_store

REPO = Path(__file__).resolve().parents[3]
REWORD = {
    "en": ["{q}", "Hi, {q}", "Quick question: {q}", "{q} Thanks!", "Could you tell me: {q}"],
    "zh": ["{q}", "你好，{q}", "请问：{q}", "{q}谢谢！", "想咨询一下：{q}"],
}
MEDIUM = {"en": "Explain in detail, with examples: {q}", "zh": "请详细解释并举例说明：{q}"}
SETS = ("public", "public2")

Prompt = dict[str, Any]  # {"id": ..., "messages": [...]}, then "prompt_tokens"
Answered = list[tuple[dict[str, Any], list[Any]]]  # a question kb answers, its packed passages


def prepare(args: argparse.Namespace) -> None:
    """kb's retrieval and packing over the dev sets -> prompts.json."""
    offline_environment()
    args.work.mkdir(parents=True, exist_ok=True)
    base = bench_settings(args.tokenizer, args.work)
    counter = LocalTokenCounter(Path(args.tokenizer))
    out: dict[str, Any] = {k: [] for k in MAX_TOKENS}
    stats = {"questions": 0, "abstained": 0, "wordings_abstained": 0}
    for name in SETS:
        settings = base.with_store(args.work / f"store-{name}")
        store = open_store(settings)
        if not store.ledger.chunk_count():
            ingest_paths(store, [args.eval / name / "docs"])
        retriever = Retriever(settings, store)
        answered = rag_prompts(name, args.eval / name, retriever, settings, counter, out, stats)
        for q, _ in answered:
            out["short"].append({"id": q["id"], "messages": [user(q["question"])]})
            out["medium"].append(
                {"id": q["id"], "messages": [user(MEDIUM[q["lang"]].format(q=q["question"]))]}
            )
        # multi-turn: earlier turns of the same language, answers quoting their passages
        for lang in ("en", "zh"):
            pool = [(q, p) for q, p in answered if q["lang"] == lang]
            out["multi"] += multi_turn_prompts(pool, lang, counter, args.multi_tokens)
        store.close()
    shuffle_workloads(out, random.Random(12))
    summary = summarize(out, stats, counter)
    out["summary"] = summary
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, ensure_ascii=False))
    print(json.dumps(summary, indent=1, ensure_ascii=False))


def bench_settings(tokenizer: Path, work: Path) -> Settings:
    """config.toml's settings with the served model's tokenizer as llm.model, the embedding
    cache in `work` and no folder groups."""
    base = load_settings(REPO / "config.toml")
    return dataclasses.replace(
        base,
        llm=dataclasses.replace(base.llm, model=str(tokenizer)),
        embed=dataclasses.replace(base.embed, cache=str(work / "embed-cache.sqlite")),
        ingest=dataclasses.replace(base.ingest, folder_groups={}),
    )


def rag_prompts(
    name: str,
    set_dir: Path,
    retriever: Retriever,
    settings: Settings,
    counter: LocalTokenCounter,
    out: dict[str, Any],
    stats: dict[str, int],
) -> Answered:
    """Each question of a dev set in its wordings, retrieved and packed by kb, added to out's
    rag, rag_rel and rag_once; the questions kb answers in their own words, with their packed
    passages (a question kb abstains on in its own words is never sent, in any wording)."""
    questions = [json.loads(x) for x in (set_dir / "qa.jsonl").read_text().splitlines() if x]
    answered: Answered = []
    for qi, q in enumerate(questions):
        stats["questions"] += 1
        if qi % 25 == 0:
            print(f"{name}: question {qi} of {len(questions)}", flush=True)
        for i, form in enumerate(REWORD[q["lang"]]):
            wording = form.format(q=q["question"])
            retrieval = retriever.retrieve(wording, settings.ingest.default_groups)
            if should_abstain(retrieval, settings):
                stats["abstained" if i == 0 else "wordings_abstained"] += 1
                if i == 0:
                    break  # kb never sends this question to the model
                continue
            lang: Lang = "zh" if retrieval.lang == "zh" else "en"
            packed, doc_order, best_first = packed_messages(
                wording, retrieval.passages, lang, settings.llm, counter
            )
            item = {"id": f"{q['id']}#{i}", "messages": doc_order}
            out["rag"].append(item)
            out["rag_rel"].append({"id": item["id"], "messages": best_first})
            if i == 0:
                out["rag_once"].append(item)
                answered.append((q, packed))
    return answered


def packed_messages(
    wording: str, passages: list[Any], lang: Lang, llm: LlmSettings, counter: LocalTokenCounter
) -> tuple[list[Any], list[dict[str, str]], list[dict[str, str]]]:
    """The passages kb packs for `wording` within its token budget, and the messages with them
    in document order (as kb sends them) and best-first (as kb packed them before)."""
    budget = plan_budget(wording, [], lang, counter.count, max_model_len=llm.max_model_len,
                         answer_tokens=llm.answer_tokens)
    packed = pack(passages, budget.passages, counter.count)
    best_first = sorted(packed, key=lambda p: -p.score)
    return (packed, build_messages(wording, render_passages(packed), [], lang),
            build_messages(wording, render_passages(best_first), [], lang))


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def conversation(lang: str, turns: list[dict[str, str]], question: str) -> list[dict[str, str]]:
    """kb's system rules, the earlier turns, then the question."""
    return [{"role": "system", "content": SYSTEM[lang]}, *turns, user(question)]


def multi_turn_prompts(
    pool: Answered, lang: str, counter: LocalTokenCounter, target: int
) -> list[Prompt]:
    """For each question of `pool` (one language): earlier turns, the next questions of the pool
    each with an answer quoting its first two passages, until the prompt reaches `target`
    tokens (the last answer cut so the whole prompt lands on it) or 12 turns are passed."""
    prompts: list[Prompt] = []
    for j, (q, _) in enumerate(pool):
        history: list[dict[str, str]] = []
        k = j
        while True:
            k = (k + 1) % len(pool)
            past_q, past_packed = pool[k]
            quotes = " ".join(f"{p.text.strip()} [{n}]" for n, p in enumerate(past_packed[:2], 1))
            trial = [
                *history,
                user(past_q["question"]),
                {"role": "assistant", "content": past_q["answer"] + " " + quotes},
            ]
            msgs = conversation(lang, trial, q["question"])
            n = counter.count_messages(msgs)
            if n >= target or len(trial) > 12:
                msgs = cut_last_answer(lang, trial, q["question"], counter, n - target, target)
                break
            history = trial
        prompts.append({"id": q["id"], "messages": msgs})
    return prompts


def cut_last_answer(
    lang: str,
    turns: list[dict[str, str]],
    question: str,
    counter: LocalTokenCounter,
    over: int,
    target: int,
) -> list[dict[str, str]]:
    """The conversation with its last answer cut, `over` characters at a time (at least one,
    never below 20 characters), until the whole prompt counts at most `target` tokens."""
    msgs = conversation(lang, turns, question)
    text = turns[-1]["content"]
    while over > 0 and len(text) > 20:
        text = text[: max(20, len(text) - max(1, over))]
        turns[-1] = {"role": "assistant", "content": text}
        msgs = conversation(lang, turns, question)
        over = counter.count_messages(msgs) - target
    return msgs


def shuffle_workloads(out: dict[str, Any], rng: random.Random) -> None:
    """Each workload in a seeded random request order; rag_rel in rag's, so the "before" list
    asks the same questions in the same order."""
    for key in ("rag", "short", "medium", "multi", "rag_once"):
        order = list(range(len(out[key])))
        rng.shuffle(order)
        out[key] = [out[key][i] for i in order]
        if key == "rag":
            out["rag_rel"] = [out["rag_rel"][i] for i in order]


def summarize(
    out: dict[str, Any], stats: dict[str, int], counter: LocalTokenCounter
) -> dict[str, Any]:
    """The question counts, each workload's prompt sizes (each prompt gains its
    "prompt_tokens") and the hit rate an ideal prefix cache would reach on the rag workloads."""
    summary: dict[str, Any] = dict(stats)
    for key, items in out.items():
        counts = [counter.count_messages(it["messages"]) for it in items]
        for it, n in zip(items, counts, strict=True):
            it["prompt_tokens"] = n
        summary[key] = {
            "prompts": len(items),
            "tokens_mean": round(statistics.mean(counts), 1),
            "tokens_min": min(counts),
            "tokens_max": max(counts),
        }
    summary["ideal_hit_rate"] = {
        k: ideal_hit_rate(out[k], counter) for k in ("rag", "rag_rel", "rag_once")
    }
    return summary


def ideal_hit_rate(items: list[dict[str, Any]], counter: Any, block: int = 16) -> float:
    """Share of prompt tokens an unbounded prefix cache of `block`-token blocks would reuse when
    the prompts arrive in this order (vLLM's rule: whole blocks of the longest cached prefix,
    never the prompt's last token)."""
    tok = counter._tokenizer  # noqa: SLF001 - the bench needs the ids, not just counts
    seen: set[int] = set()
    hit = total = 0
    for it in items:
        ids = tok(counter.render(it["messages"]), add_special_tokens=False)["input_ids"]
        total += len(ids)
        chain, cached, hashes = 0, True, []
        for b in range(len(ids) // block):
            chain = hash((chain, tuple(ids[b * block : (b + 1) * block])))
            hashes.append(chain)
            if cached and chain in seen and (b + 1) * block < len(ids):
                hit += block
            else:
                cached = False
        seen.update(hashes)
    return round(hit / total, 4) if total else 0.0
