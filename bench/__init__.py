"""The benchmarks: each a module run from the repository root, `python -m bench.NAME ARGS`,
that prints one JSON report; `python -m bench` (bench/__main__.py) runs the registered ones and
records their reports in bench/results/, and `python -m bench report` writes BENCHMARKS.md
from them (report.py, with report_sections.py, report_goals.py and recorded.py).

  query, pack     retrieve_latency.py (retrieve + pack at 100k/1M chunks), overhead.py (the
                  pipeline's time before the model's first token), cold_start.py (`kb ask`)
  ingest          ingest_speed.py, ingest_levers.py, ingest_workers.py, embed_waves.py,
                  parse_speed.py, reindex_speed.py, corpus_gen.py (the generated corpus)
  serving         load.py (many askers through the page and the API), refresh_delay.py
                  (several app processes), loop_guard.py and penalties.py (a small real model)
  on a GPU        gpu_serve/ (vLLM through kb's own client), gpu_ingest.py with
                  gpu_ingest_kit.sh and gpu_ingest_step.sh (docs/gpu.md)
  shared          common.py (the sample store, the questions, the host), eval_table.py (rows
                  from `kb eval --json` reports)

The real parts they start (the vLLM test server, app processes, a Chroma server, PostgreSQL, a
free port) come from devtools/.
"""
