"""Re-index speed on a generated corpus: fresh ingest, re-index unchanged, re-index with 1% of
the files changed, in the same run.

The corpus: N Word files (default 120) written here with python-docx, bilingual policy-like
sections whose sentences carry each file's own numbers, so no two files share a passage. "1%
changed" edits one paragraph in ceil(N / 100) files (a new sentence, as an amended clause) and
saves them again. Embedding caches start empty.

Fresh ingest and re-index run in this process, as one long-running process (the app, a queue
worker) does them. `--cli` also times `kb ingest` and `kb reindex` as commands, each in a new
process, into a store of their own: what an admin at the command line waits for, process start,
imports and model loads included.

    .venv/bin/python -m bench.ingest.reindex_speed --files 120
    .venv/bin/python -m bench.ingest.reindex_speed --files 100 --cli
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from core.config import load_settings
from core.offline import offline_environment
from ingest.pipeline import ingest_paths
from ingest.reindex import reindex
from store.store import open_store

REPO = Path(__file__).resolve().parents[2]

TOPICS = [
    ("Annual leave", "年假"),
    ("Travel expenses", "差旅费"),
    ("Remote work", "远程办公"),
    ("Information security", "信息安全"),
    ("Overtime pay", "加班工资"),
    ("Training budget", "培训预算"),
]
EN = [
    "Employees in grade {a} accrue {b} days of {t} per year of service.",
    "Requests above {b} hundred yuan need the approval of a department head within {a} days.",
    "The {t} rules of office {a} apply from {b} January and replace the earlier version.",
    "A claim must be filed within {b} days; late claims are reviewed by the {t} committee {a}.",
]
ZH = [
    "第{a}条 员工每年享有{t}{b}天，由部门负责人审批。",
    "超过{b}百元的{t}申请，须在{a}个工作日内报财务部审核。",
    "本办法第{a}款自{b}月1日起施行，原{t}规定同时废止。",
]


def paragraph(rng: random.Random, english: bool, topic: tuple[str, str], n: int) -> str:
    templates = EN if english else ZH
    words = topic[0].lower() if english else topic[1]
    return " ".join(
        rng.choice(templates).format(a=n * 7 + i, b=rng.randint(2, 99), t=words)
        for i in range(rng.randint(3, 6))
    )


def write_file(path: Path, index: int, edit: int = 0) -> None:
    import docx

    rng = random.Random(index)
    english = index % 2 == 0
    document = docx.Document()
    document.add_heading(f"Policy {index}" if english else f"制度 {index}", level=0)
    for s, topic in enumerate(TOPICS):
        document.add_heading(topic[0] if english else topic[1], level=1)
        for p in range(3):
            text = paragraph(rng, english, topic, index * 100 + s * 10 + p)
            if edit and (s, p) == (2, 1):
                text += f" Amended clause {edit}." if english else f" 修订条款{edit}。"
            document.add_paragraph(text)
    document.save(str(path))


def edit_one_percent(corpus: Path, files: int, edit: int) -> int:
    """Amend one paragraph in ceil(files / 100) of the files; how many were changed."""
    changed = math.ceil(files / 100)
    for i in range(changed):
        write_file(corpus / f"policy-{i * 37 % files:04d}.docx", i * 37 % files, edit=edit)
    return changed


def timed_kb(*args: str, cache: Path) -> float:
    """Seconds `kb ARGS` takes as a command of its own (the embedding cache given)."""
    kb = Path(sys.executable).with_name("kb")
    started = time.perf_counter()
    subprocess.run(
        [str(kb), *args, "--quiet"], cwd=REPO, check=True, stdout=subprocess.DEVNULL,
        env={**os.environ, "KB_EMBED_CACHE": str(cache)},
    )
    return time.perf_counter() - started


def cli_rounds(corpus: Path, files: int, tmp: Path) -> dict[str, object]:
    """`kb ingest` of the corpus into a new store, then `kb reindex` with 1% changed, then
    unchanged: each a new process."""
    store, cache = tmp / "cli-store", tmp / "cli-cache.sqlite"
    fresh_s = timed_kb("ingest", str(corpus), "--store", str(store), cache=cache)
    edit_one_percent(corpus, files, edit=2)
    one_pct_s = timed_kb("reindex", "--store", str(store), cache=cache)
    unchanged_s = timed_kb("reindex", "--store", str(store), cache=cache)
    return {
        "fresh_s": round(fresh_s, 2),
        "reindex_1pct_changed_s": round(one_pct_s, 2),
        "reindex_unchanged_s": round(unchanged_s, 2),
        "speedup_1pct_vs_fresh": round(fresh_s / one_pct_s, 1),
        "speedup_unchanged_vs_fresh": round(fresh_s / unchanged_s, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=120)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--cli", action="store_true", help="also as `kb` commands, each a process")
    args = parser.parse_args()
    offline_environment()
    tmp = Path(tempfile.mkdtemp(prefix="kb-bench-reindex-"))
    corpus = tmp / "docs"
    corpus.mkdir()
    for i in range(args.files):
        write_file(corpus / f"policy-{i:04d}.docx", i)
    settings = load_settings(REPO / "config.toml").with_store(tmp / "store")
    settings = replace(
        settings,
        embed=replace(settings.embed, cache=str(tmp / "cache.sqlite")),
        ingest=replace(settings.ingest, folder_groups={}),
    )
    store = open_store(settings)

    started = time.perf_counter()
    fresh = ingest_paths(store, [corpus], workers=args.workers)
    fresh_s = time.perf_counter() - started

    started = time.perf_counter()
    unchanged = reindex(store, workers=args.workers)
    unchanged_s = time.perf_counter() - started

    changed = edit_one_percent(corpus, args.files, edit=1)
    started = time.perf_counter()
    one_pct = reindex(store, workers=args.workers)
    one_pct_s = time.perf_counter() - started
    store.close()
    cli = cli_rounds(corpus, args.files, tmp) if args.cli else None

    print(
        json.dumps(
            {
                "files": args.files,
                "fresh": {"seconds": round(fresh_s, 2), "embedded": fresh.embedded},
                "reindex_unchanged": {
                    "seconds": round(unchanged_s, 3),
                    "embedded": unchanged.embedded,
                    "speedup_vs_fresh": round(fresh_s / unchanged_s, 1),
                },
                "reindex_1pct_changed": {
                    "files_changed": changed,
                    "seconds": round(one_pct_s, 3),
                    "embedded": one_pct.embedded,
                    "updated": one_pct.counts.get("updated", 0),
                    "speedup_vs_fresh": round(fresh_s / one_pct_s, 1),
                },
                **({"cli": cli} if cli else {}),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
