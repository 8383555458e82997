"""Serving the answering model: `kb llm serve` starts vLLM for `[llm]` and waits until it
answers.

    serve.py      `kb llm serve`: the vLLM server for `[llm]`, its flags, stopping with it
    cpu_entry.py  the vLLM CPU entry point (the idle spin kept short)
    demo.py       the demo's model server: local weights, or a hub download
    testmodel.py  the tiny random test models

It imports core and llm/ (where a server is, its tokenizer). The next engine gets its start
beside serve.py.
"""
