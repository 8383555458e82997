"""Which files of a run need work: each file found, compared with the ledger before anything
is parsed (`ingest_paths` in ingest/pipeline.py runs it).

    todo = triage(store, found, groups, retry_failed, finish)   # the new and changed files

A file whose size and mtime are the live version's, or whose sha256 is, is unchanged; one whose
content is live but whose metadata changed (sidecar, groups) is updated in place, unparsed; a
failed one that did not change stays failed unless `retry_failed`; a symbolic link is recorded
as skipped with its reason (`SymbolicLink`), never followed (ingest/discover.py). Each file so
decided goes to `finish`; the new and changed ones are returned, to be parsed or queued.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from core.errors import KbError, SymbolicLink
from core.policy_dates import carry_admin_dates
from core.types import DocMeta, DocRecord, FileOutcome
from ingest.discover import describe, link_error, sha256_file
from store.store import Store
from store.vectors import group_metadata


@dataclass(frozen=True)
class ToDo:
    """A new or changed file, to be parsed and written (or queued)."""

    meta: DocMeta  # with its sha256
    path: Path
    had_version: bool  # a version of it is live: "updated" once written, else "ingested"
    was_english: bool  # its last version was English (jieba need not load for it)


def triage(
    store: Store,
    found: Sequence[tuple[Path, Path]],
    groups: Sequence[str] | None,
    retry_failed: bool,
    finish: Callable[[FileOutcome], None],
) -> list[ToDo]:
    """Each (root, file) found, compared with the ledger; see the module docstring."""
    todo: list[ToDo] = []
    for root, path in found:
        label = str(path)
        try:
            meta = describe(store.settings, root, path, groups)
        except (OSError, KbError) as exc:
            finish(FileOutcome(label, "failed", "failed", str(exc)))
            continue
        old = store.ledger.document(meta.id)
        meta = carry_admin_dates(meta, old.meta if old else None)
        same_file = old is not None and (old.meta.size, old.meta.mtime) == (meta.size, meta.mtime)
        if old and old.status != "ok" and same_file and not retry_failed:
            finish(FileOutcome(label, "unchanged", old.status, old.reason))
            continue
        try:
            meta = replace(meta, sha256=_sha256(root, path, old if same_file else None))
        except SymbolicLink as exc:
            store.ledger.mark_failed(meta, exc.status, str(exc))
            finish(FileOutcome(label, "skipped", exc.status, str(exc)))
            continue
        except OSError as exc:
            reason = f"{path.name}: cannot be read ({exc}); check the file"
            finish(FileOutcome(label, "failed", "broken", reason))
            continue
        if old and old.status == "ok" and old.meta.sha256 == meta.sha256:
            finish(same_content(store, old, meta, label))
            continue
        had_version = old is not None and old.chunk_count > 0
        was_english = old is not None and old.meta.lang == "en"
        todo.append(ToDo(meta, path, had_version, was_english))
    return todo


def _sha256(root: Path, path: Path, same: DocRecord | None) -> str:
    """The file's sha256: its live version's when the file did not change (`same`: the
    version of the same size and mtime), else read; SymbolicLink for a link."""
    if path.is_symlink():
        raise link_error(path.relative_to(root).as_posix())
    if same is not None and same.status == "ok":
        return same.meta.sha256
    return sha256_file(path, root)


def same_content(store: Store, old: DocRecord, meta: DocMeta, label: str) -> FileOutcome:
    """A file whose content is live already: "unchanged", or "updated" where its metadata
    (sidecar, groups) changed, in the ledger and in Chroma."""
    meta = replace(
        meta,
        title=meta.title or old.meta.title,
        lang=old.meta.lang,
        page_labels=old.meta.page_labels,
        ocr_pages=old.meta.ocr_pages,
    )
    if same_meta(old.meta, meta) and old.meta.mtime == meta.mtime:
        return FileOutcome(label, "unchanged", chunks=old.chunk_count)
    store.ledger.update_document_meta(meta)
    ids = store.ledger.chunk_ids(meta.id)
    store.vectors.update_metadata(
        store.collection, ids, [group_metadata(meta.id, meta.groups)] * len(ids)
    )
    changed = not same_meta(old.meta, meta)
    return FileOutcome(label, "updated" if changed else "unchanged", chunks=old.chunk_count)


def same_meta(a: DocMeta, b: DocMeta) -> bool:
    keys = ("groups", "version", "effective_date", "series", "review_by", "expires", "admin_dates")
    return all(getattr(a, k) == getattr(b, k) for k in keys) and (not b.title or a.title == b.title)
