"""What tests, benchmarks and scripts share to run real parts, each started on loopback and
stopped again:

  ports.py          a free port
  processes.py      stopping a server process (SIGTERM, then SIGKILL)
  vllm_server.py    the vLLM CPU server with the tiny test model (a pytest fixture)
  chroma_server.py  a `chroma run` server (a fixture, and a context manager for benchmarks)
  postgres.py       a throwaway PostgreSQL cluster for the ledger (fixtures and a context manager)
  app_processes.py  several `kb serve` processes sharing one store
  chromium.py       headless Chromium over the DevTools protocol
  system_deps.py    a test's skip (or, in CI, failure) when a system package it needs is missing
"""
