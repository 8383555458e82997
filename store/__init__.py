"""The second floor: what both pipelines read and write. A process opens one `Store` (ledger,
vector index, embedder) and hands it down; ingest writes to it, the assistant reads it.

    store.py           `Store`: the ledger, the vectors and the embedder of a store folder
    write_lock.py      one writer at a time, across processes (`write.lock` in the store folder)
    vectors.py         the Chroma adapter (embedded or a server, `store.mode`)
    lazy_vectors.py    Chroma opened on first use
    crosslang_space.py the crosslang space: every live passage in the multilingual embedder's
                       own collection, brought up to the live chunks at the end of every write
    retention.py       the retention pass: the ledger's rows, deleted uploads, logs and downloads
                       past their limits, run by `kb prune` and on a schedule

    embed/             the passage and question embedders and their cache
    ledger/            the ledger of record (SQLite or PostgreSQL), the only place SQL is spoken

It imports core only. A new outside store gets an adapter beside vectors.py behind
`core.ports.VectorIndex`; the next table goes into ledger/, the next embedder into embed/.
"""
