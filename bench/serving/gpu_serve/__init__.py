"""GPU serving benchmark: kb's own prompts, sent by kb's own client, to vLLM on a GPU.

Three commands (bench/serving/gpu_serve/__main__.py), the first on any machine with the kb
environment, the others where the GPU is, each from the repository root:

    # 1. kb retrieves and packs every dev-set question (and reworded copies of it), with the
    #    served model's tokenizer, into prompts.json (no GPU, no model server needed)
    .venv/bin/python -m bench.serving.gpu_serve prepare --tokenizer /tmp/ernie-tok \\
        --out /tmp/gpu/prompts.json
    # 2. on the GPU machine: start vLLM with `kb llm serve`'s flags plus each variant's extra
    #    flags, warm it up, drive it with LlmClient (streamed, ignore_eos) at each concurrency
    python3 -m bench.serving.gpu_serve run --prompts prompts.json --model /tmp/ernie \\
        --out results.json --variant 'kb=' \\
        --variant 'tuned=--api-server-count 4 --max-num-batched-tokens 16384' \\
        --plan 'rag:1,rag:16,rag:64,rag:256'
    # 3. anywhere: Markdown tables such as those of docs/benchmarks-history.md
    python3 -m bench.serving.gpu_serve table results.json

The modules:
  prepare.py  the workloads: kb's retrieval and packing over the dev sets -> prompts.json
  run.py      the `run` command: per variant, its servers started, warmed up, its plan driven,
              each scenario's figures added to the results file
  load.py     one scenario: closed-loop users in client processes, sending through LlmClient,
              and the figures of their requests (throughput, TTFT and end-to-end percentiles)
  vllm.py     the vLLM server: kb's flags, start and stop, its /metrics counters, the prefix
              cache reset, a GPU utilisation monitor
  table.py    the Markdown table of results files

`run` imports only bench/serving/gpu_serve/{run,load,vllm,table}.py, the empty bench/ and
bench/serving/ packages, core/{config,errors,offline,ports,types}.py,
assistant/{llm,endpoint,tokens,replicas}.py and assistant/serving/serve.py (with httpx, numpy and
transformers, which vLLM brings), so the checkout is all the GPU machine needs besides
vLLM itself (docs/gpu.md, section 6). Requests go through `LlmClient.stream` exactly as
`Assistant.ask_stream` sends them (the token budget checked with the served tokenizer first), one
closed-loop "user" per thread, threads spread over client processes. Before every measured run the
server's prefix cache is emptied (`POST /reset_prefix_cache`, which needs VLLM_SERVER_DEV_MODE=1),
so a run reuses only what it shared within itself. The prefix-cache hit rate is read from vLLM's
/metrics.
"""
