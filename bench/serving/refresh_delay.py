"""Snapshot refresh delay with several app processes (issue 13): how long after an upload
through app process A commits does another app process answer with the new document?

Three real `kb serve` processes share one store (the SQLite ledger in the store folder, or
--ledger-url; one `chroma run` server; data/samples/docs ingested first), the model unreachable
(retrieval-only answers). Each round uploads a new .docx through A's admin API while one thread
reads the ledger's generation every 10 ms (the upload's commit) and three ask A, B and C
`POST /api/ask` every 100 ms until the document's passage comes back; delays count from the
commit. A wrote it (it rebuilds when its write ends); B refreshes in the background every
`--refresh-s` (the app's default design); C, the baseline, has `retrieve.refresh_s = 0`: it
reads the generation on every question and rebuilds on that question's time.

    .venv/bin/python -m bench.serving.refresh_delay --rounds 5 --refresh-s 1.0
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from core.config import Settings, load_settings
from core.offline import offline_environment
from devtools.app_processes import (
    AppProcess,
    passages,
    shared_env,
    start_app,
    stop,
    wait_for_file,
    wait_ready,
)
from devtools.chroma_server import running_chroma
from devtools.postgres import throwaway_cluster
from store.store import open_ledger
from ui.wiring import store_for, users_for

REPO = Path(__file__).resolve().parents[2]

PASSWORD = "bench-password"


def make_doc(path: Path, word: str) -> None:
    import docx

    doc = docx.Document()
    doc.add_heading(f"{word.title()} Allowance Policy", level=1)
    doc.add_paragraph(f"Each employee receives 9 {word} vouchers per year for the {word} "
                      "allowance, redeemable at the staff canteen.")
    doc.save(str(path))


def poll(found: dict[str, float], name: str, app: AppProcess, token: str, question: str,
         file: str) -> None:
    """The perf_counter time at which `app` first answers with a passage of `file`."""
    wait_for_file(app, token, question, file, 120.0, poll_s=0.1)
    found[name] = time.perf_counter()


def watch_generation(settings: Settings, before: int, found: dict[str, float]) -> None:
    """The perf_counter time at which the ledger's generation moves past `before` (the
    upload's commit), read every 10 ms."""
    ledger = open_ledger(settings)
    try:
        while ledger.generation() == before:
            time.sleep(0.01)
        found["commit"] = time.perf_counter()
    finally:
        ledger.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--refresh-s", type=float, default=1.0)
    parser.add_argument("--ledger-url", default="", help="PostgreSQL ledger (default: SQLite)")
    parser.add_argument("--postgres", action="store_true",
                        help="the ledger in a throwaway PostgreSQL cluster (devtools/postgres.py)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    offline_environment()
    if args.postgres:
        with throwaway_cluster() as cluster:
            args.ledger_url = cluster.database("refresh_bench")
            run(args)
    else:
        run(args)


def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="kb-refresh-"))
    try:
        with running_chroma(work / "chroma") as chroma:
            env = shared_env(chroma.host, chroma.port, "refresh", work / "embed.sqlite",
                             args.refresh_s, args.ledger_url)
            settings = load_settings(REPO / "config.toml", environ=env).with_store(work / "store")
            settings = dataclasses.replace(settings, base_dir=REPO)
            chunks = ingest_samples(settings)
            with users_for(settings) as users:
                users.add("admin", PASSWORD, ["all"], is_admin=True)
                token = users.new_token("admin")
            rows = measure_rounds(args, settings, env, token, work)
            summarize(args, chunks, rows)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def ingest_samples(settings: Settings) -> int:
    """data/samples/docs ingested into the shared store; its chunk count."""
    from ingest.pipeline import ingest_paths

    with store_for(settings) as opened:
        report = ingest_paths(opened, [REPO / "data" / "samples" / "docs"])
        chunks = opened.ledger.chunk_count()
    print(f"store: {report.counts['ingested']} documents, {chunks} chunks", flush=True)
    return chunks


def measure_rounds(args: argparse.Namespace, settings: Settings, env: dict[str, str],
                   token: str, work: Path) -> list[dict[str, float]]:
    """The three apps started and warmed up, then each round's upload and delays."""
    # A writes; B refreshes in the background every refresh_s; C, the baseline, checks the
    # ledger's generation on every question (refresh_s = 0) and rebuilds on its time.
    apps = [start_app(work / "store", {**env, "KB_RETRIEVE_REFRESH_S": str(r)}, work)
            for r in (args.refresh_s, args.refresh_s, 0.0)]
    try:
        for app in apps:
            wait_ready(app)
        from gradio_client import Client

        client = Client(apps[0].url, auth=("admin", PASSWORD), verbose=False,
                        download_files=False)
        for app in apps:  # warm: the first question loads the embedder
            passages(app, token, "How many days of annual leave?")
        rows = []
        for i in range(args.rounds):
            row = one_round(f"zorvex{i}q", client, apps, settings, token, work)
            rows.append(row)
            print(f"round {i + 1}: upload {row['upload_s']:.2f} s; after the commit A answered "
                  f"with it in {row['a']:.3f} s, B in {row['b']:.3f} s, C in "
                  f"{row['c']:.3f} s", flush=True)
        return rows
    finally:
        for app in apps:
            stop(app)


def one_round(word: str, client: Any, apps: list[AppProcess], settings: Settings, token: str,
              work: Path) -> dict[str, float]:
    """A new document about `word` uploaded through A's admin page, watched for: the seconds
    the upload took, and after its commit, the seconds until A, B and C answer with it."""
    from gradio_client import handle_file

    path = work / f"{word.title()}-Policy.docx"
    make_doc(path, word)
    question = f"How many {word} vouchers per year?"
    with store_for(settings) as opened:
        before = opened.ledger.generation()
    found: dict[str, float] = {}
    threads = [threading.Thread(target=watch_generation, args=(settings, before, found))]
    threads += [threading.Thread(target=poll, args=(found, n, x, token, question, path.name))
                for n, x in zip("abc", apps, strict=True)]
    for thread in threads:
        thread.start()
    started = time.perf_counter()
    client.predict([handle_file(str(path))], ["all"], api_name="/ingest")
    upload_s = time.perf_counter() - started
    for thread in threads:
        thread.join()
    return {"upload_s": upload_s, **{k: found[k] - found["commit"] for k in "abc"}}


def summarize(args: argparse.Namespace, chunks: int, rows: list[dict[str, float]]) -> None:
    """The medians and maxima printed, and all figures written to --out."""
    med = {k: statistics.median(r[k] for r in rows) for k in "abc"}
    summary = {
        "refresh_s": args.refresh_s, "ledger": "postgres" if args.ledger_url else "sqlite",
        "chunks": chunks, "rounds": rows, "median_s": med,
        "max_s": {k: max(r[k] for r in rows) for k in "abc"},
        "b_over_c": med["b"] / med["c"] if med["c"] else None,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "rounds"}, indent=1))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
