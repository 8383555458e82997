"""The third floor: files to live passages. `ingest_paths` finds the files, parses them in
worker processes, chunks and embeds them, and one writer makes each document live.

    pipeline.py     `ingest_paths`, `delete_document`, `store_status`: the ingest pipeline
    discover.py     finding files (symbolic links never followed), their ids, hashes, sidecars
    triage.py       which files of a run changed; links recorded as skipped
    prepare.py      a parsed document chunked and embedded
    chunk.py        structure- and sentence-aware chunking with stable ids
    writer.py       the one writer that makes a document live; crash recovery
    dates.py        the dates an admin sets on a document, kept through re-ingests
    embed_ahead.py  embedding the next files while one is written
    processes.py    the worker-process class both pools use
    workers.py      `--workers N`: parse and embed in processes, one writer
    queue.py        the job queue and `kb worker`
    reindex.py      `reindex`: incremental, or a fresh collection switched at the end

    parse/          files to blocks: PDF, Word, legacy .doc, OCR, tables
    sync/           the folders kept in sync

It imports core and store. A new file type gets its parser in parse/; a new kind of source (a
document library, a bucket) goes into sync/ beside folder.py. The hall holds twelve modules, a
room's most (tests/test_layers.py): the next piece of the pipeline takes its neighbours into a
room of their own (the worker pools: embed_ahead.py, processes.py, workers.py).
"""
