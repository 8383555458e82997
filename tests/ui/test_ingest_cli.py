"""`kb ingest --queue [--wait]` and `kb worker` as a user types them (click's runner, a real
store): the queued files, the worker's jobs, the waiter's report."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ingest.queue import run_worker
from store.embed.embedder import torch_device
from store.store import open_store
from ui.cli import main

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "docs"


def test_queue_wait_and_worker_from_the_command_line(make_settings: Any, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("Employee-Leave-Policy.pdf", "Code-of-Conduct.docx"):
        shutil.copy(SAMPLES / name, docs)
    settings = make_settings()
    store = str(settings.store_path())
    env = {"KB_EMBED_CACHE": settings.embed.cache, "KB_INGEST_QUEUE_POLL_S": "0.2"}
    run = CliRunner().invoke

    wrong = run(main, ["ingest", str(docs), "--wait", "--store", store], env=env)
    assert wrong.exit_code == 2 and "--wait goes with --queue" in wrong.output

    queued = run(main, ["ingest", str(docs), "--queue", "--quiet", "--store", store], env=env)
    assert queued.exit_code == 0, queued.output
    assert "2 files queued (batch " in queued.output

    status = run(main, ["status", "--store", store], env=env)
    assert "queue      2 queued, 0 running" in status.output

    worker = run(main, ["worker", "--drain", "--threads", "1", "--store", store], env=env)
    assert worker.exit_code == 0 and "2 jobs done" in worker.output, worker.output
    listed = run(main, ["docs", "--store", store], env=env)
    assert "2 documents" in listed.output and listed.output.count(" ok ") == 2

    # --wait, with a worker taking jobs beside it (in this process): the per-file report
    shutil.copy(SAMPLES / "员工福利手册.docx", docs)
    stop = threading.Event()
    beside = open_store(settings)
    thread = threading.Thread(target=run_worker, args=(beside,), kwargs={"stop": stop})
    thread.start()
    try:
        waited = run(
            main, ["ingest", str(docs), "--queue", "--wait", "--quiet", "--store", store], env=env
        )
    finally:
        stop.set()
        thread.join()
        beside.close()
    assert waited.exit_code == 0, waited.output
    assert "ingested  " in waited.output and "员工福利手册.docx (" in waited.output
    assert "ingested 1, unchanged 2, updated 0, removed 0, failed 0" in waited.output


def test_embed_device_auto_is_the_gpu_when_torch_sees_one() -> None:
    import torch

    assert torch_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    assert torch_device("cpu") == "cpu" and torch_device("cuda:1") == "cuda:1"
