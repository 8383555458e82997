"""The folders kept in sync (`[[sources]]` in config.toml, `kb sync`; docs/owners.md): each
source's new, changed, renamed and removed files followed into the store.

    folder.py    one pass over a folder: renames found by content, new and changed files
                 ingested, deletes held back by the brake when too many files vanish
    schedule.py  when each source is due, and the loop of `kb sync`

It imports core, store and the ingest floor's pipeline (`ingest_paths`, `delete_document`) and
discovery. Another kind of source (a document library, a bucket) goes beside folder.py, with
its pass's report of the same shape.
"""
