"""The answering model as the assistant talks to it: vLLM's OpenAI-compatible server, one or
several, and the model's own tokenizer.

    client.py     `LlmClient`: streamed and plain completions, timeouts, retries, cancelling
    endpoint.py   where the model server is and whether it answers; its TLS
    replicas.py   several model servers, each question to the least busy
    tokens.py     exact token counting with the model's tokenizer (local, or the server's)
    loopguard.py  stopping an answer that repeats itself

It imports core only. The next kind of model server gets a client beside client.py behind
`core.ports.Generator`; starting a server is serving/'s.
"""
