"""Questions across languages (crosslang; docs/crosslang.md): an English question finds a Chinese
policy and a Chinese question an English one. Two sides, each with its own gate, join the
retriever's rank fusion only when they earn it:

    bridge.py     the bridge, the lexical side: the question's words carried across by the
                  glossary and CC-CEDICT and searched by BM25 (`retrieve.bilingual*`)
    evidence.py   when a refusal's evidence is read in the other language too
                  (`retrieve.crosslang_evidence`)
    glossary.py   the policy glossary and CC-CEDICT, read both ways
    space.py      the space, the embedding side: the question in the crosslang space
                  (store/crosslang_space.py) beside BM25 (`retrieve.crosslang_*`), and the
                  other language's best passages kept near the top whatever its gate
    translate.py  the served model's translation of a question (`retrieve.translate`, off)

A retrieval reports the two gates as `Retrieval.bridge_gate` and `Retrieval.space_gate`. The
settings keep the names they had before the sides had these (`retrieve.bilingual*`,
`embed.multilingual_model`, `retrieve.crosslang_*`).

It imports core, store, the retrieve room's hall (BM25, the dense side's thread, the snapshot)
and the assistant floor's reading of a question. The next way across languages is a module
here with a gate of its own, reported beside the other two.
"""
