"""Retrieval: the question's best passages among those its asker may see. BM25 and the dense side
run side by side over an in-memory snapshot of the live chunks, the groups' mask applied before
anything leaves; their candidates are fused with further rankings by RRF.

    retriever.py    `Retriever.retrieve` in its steps; a snapshot prepared for questions
    snapshot.py     the snapshot of live chunks, their group masks and documents in force
    keeper.py       the current snapshot, kept fresh by its questions or a refresher thread
    lexical.py      BM25 over jieba and English words, the paraphrase table
    dense.py        the dense side, on a worker thread
    fuse.py         RRF and score fusion (pure)
    rankings.py     the coverage, title, amount and owner rankings; newest versions first
    owners.py       the organisation a document's title names, and the one a question names
    asked_amount.py the amount a question asks for
    spelling.py     a question's misspelt words as the library spells them, for BM25
    rerank.py       the optional cross-encoder

    crosslang/      questions across languages: the bridge and the space

It imports core, store and, from the assistant floor's hall, the answerability features and the
passages' rendering (what the dense side counts ahead). A new ranking is one function in
rankings.py (`RANKINGS`); a new side of retrieval a module beside dense.py, started and waited
for in `Retriever.retrieve`.
"""
