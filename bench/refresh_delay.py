"""Snapshot refresh delay with two app processes (issue 13): how long after an admin's upload
through app process A returns does app process B answer with the new document?

Two real `kb serve` processes share one store (the SQLite ledger in the store folder, or
--ledger-url; one `chroma run` server; data/samples/docs ingested first), the model unreachable
(retrieval-only answers). Each round uploads a new .docx through A's admin API, then two threads
ask A and B `POST /api/ask` every 50 ms until the document's passage comes back. A, the writing
process, is the baseline (it rebuilds its snapshot on its own write); B sees the change through
its refresher (`retrieve.refresh_s`).

    .venv/bin/python bench/refresh_delay.py --rounds 5 --refresh-s 1.0
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from core.config import load_settings  # noqa: E402
from tests.app_processes import (  # noqa: E402
    AppProcess,
    running_apps,
    shared_env,
    wait_for_file,
)
from tests.chroma_server import chroma_command  # noqa: E402
from tests.vllm_server import free_port  # noqa: E402
from ui.cli_common import offline_environment  # noqa: E402
from ui.wiring import store_for, users_for  # noqa: E402

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
    found[name] = wait_for_file(app, token, question, file, 60.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--refresh-s", type=float, default=1.0)
    parser.add_argument("--ledger-url", default="", help="PostgreSQL ledger (default: SQLite)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    offline_environment()
    work = Path(tempfile.mkdtemp(prefix="kb-refresh-"))
    chroma_port = free_port()
    chroma = subprocess.Popen([chroma_command(), "run", "--path", str(work / "chroma"),
                               "--host", "127.0.0.1", "--port", str(chroma_port)],
                              stdout=(work / "chroma.log").open("wb"), stderr=subprocess.STDOUT)
    try:
        for _ in range(300):
            try:
                if httpx.get(f"http://127.0.0.1:{chroma_port}/api/v2/heartbeat").is_success:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        store = work / "store"
        env = shared_env("127.0.0.1", chroma_port, "refresh", work / "embed.sqlite",
                         args.refresh_s, args.ledger_url)
        settings = load_settings(REPO / "config.toml", environ=env).with_store(store)
        settings = dataclasses.replace(settings, base_dir=REPO)
        from ingest.pipeline import ingest_paths

        with store_for(settings) as opened:
            report = ingest_paths(opened, [REPO / "data" / "samples" / "docs"])
            chunks = opened.ledger.chunk_count()
        print(f"store: {report.counts['ingested']} documents, {chunks} chunks", flush=True)
        with users_for(settings) as users:
            users.add("admin", PASSWORD, ["all"], is_admin=True)
            token = users.new_token("admin")
        rows = []
        with running_apps(store, env, count=2, logs=work) as (a, b):
            from gradio_client import Client, handle_file

            client = Client(a.url, auth=("admin", PASSWORD), verbose=False,
                            download_files=False)
            for i in range(args.rounds):
                word = f"zorvex{i}q"
                path = work / f"{word.title()}-Policy.docx"
                make_doc(path, word)
                question = f"How many {word} vouchers per year?"
                started = time.perf_counter()
                client.predict([handle_file(str(path))], ["all"], api_name="/ingest")
                upload_s = time.perf_counter() - started
                found: dict[str, float] = {}
                threads = [threading.Thread(target=poll, args=(found, n, x, token, question,
                                                               path.name))
                           for n, x in (("a", a), ("b", b))]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                rows.append({"upload_s": upload_s, **found})
                print(f"round {i + 1}: upload {upload_s:.2f} s, then A {found['a']:.3f} s, "
                      f"B {found['b']:.3f} s", flush=True)
        a_med = statistics.median(r["a"] for r in rows)
        b_med = statistics.median(r["b"] for r in rows)
        summary = {
            "refresh_s": args.refresh_s, "ledger": "postgres" if args.ledger_url else "sqlite",
            "chunks": chunks, "rounds": rows, "a_median_s": a_med, "b_median_s": b_med,
            "b_max_s": max(r["b"] for r in rows), "b_over_a": b_med / a_med if a_med else None,
        }
        print(json.dumps({k: v for k, v in summary.items() if k != "rounds"}, indent=1))
        if args.out:
            args.out.write_text(json.dumps(summary, indent=1))
    finally:
        chroma.terminate()
        chroma.wait(timeout=20)


if __name__ == "__main__":
    main()
