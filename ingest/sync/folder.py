"""Folders kept in sync (`[[sources]]`, core/settings/sources.py): one pass over a source
brings the store in step with its folder; `kb sync` and `kb worker` run each source when due
(ingest/sync/schedule.py).

    report = sync_source(store, source, max_delete_share=0.2, now=time.time())
    report.state -> "braked"; report.reason -> "12 of 40 files vanished (30% > 20%); ..."

A source owns exactly the documents whose root is its folder. Uploads (`<store>/uploads/...`)
and other sources have other roots, so a pass never touches them.

A pass walks the folder (hidden entries skipped, as `kb ingest` does) and compares each file's
size and mtime with the ledger: equal ones are unchanged without being read, which is how a pass
over 10,000 unchanged files stays well under the 10 s goal (`python -m bench sync`). Then:

1. Renames: a vanished document whose sha256 is a new file's (only new files of a vanished
   document's size are hashed) is moved to the new path in one ledger transaction
   (`Ledger.move_document`): no re-parse, no re-embedding, no moment without the document, and
   its passages keep their ids, so answers given before still open their sources.
2. New and changed files go through `ingest_paths` with the source's groups, known under the
   source's folder; a file that fails is counted and named, the others go on. A symbolic link
   (to a file, a folder, or nothing) is never followed: `ingest_paths` records it as skipped,
   and every pass names the links in its reason.
3. Deletes, behind the brake: when the folder is missing or unreadable, or empty while the
   ledger knows files of it, or more than `sync.max_delete_share` of its known files vanished
   at once, nothing is deleted; the source is marked `braked` with the reason, until the files
   are back or an admin runs `kb sync --confirm-deletes NAME` (`confirm_deletes`). Files under
   a sub-folder that cannot be read are not counted as vanished.

The pass decides without the store's write lock (a folder that did not change costs a walk,
one read of its documents and its state saved) and takes it only to act, deciding again under
it. The clock is passed
in: `now` is the pass's time, and the source is due again at `now + every`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.config import IngestSettings
from core.errors import KbError, SymbolicLink
from core.settings.sources import SourceSettings
from core.types import DocRecord, IngestReport
from ingest.discover import SIDECAR_SUFFIX, doc_id_for, sha256_file
from ingest.pipeline import delete_document, ingest_paths
from store.ledger import SyncState
from store.store import Store
from store.vectors import group_metadata

logger = logging.getLogger(__name__)


@dataclass
class Walk:
    """What a folder holds now: each file's size and mtime by its path under the folder."""

    files: dict[str, tuple[int, float]] = field(default_factory=dict)  # links too (their own)
    links: list[str] = field(default_factory=list)  # symbolic links: recorded skipped, unread
    sidecars: list[tuple[str, int, float]] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)  # sub-folders that could not be read
    missing: str = ""  # why the folder itself cannot be read; "" when it can


@dataclass
class Plan:
    """What a pass will do, decided from a walk and the source's documents."""

    to_ingest: list[str]  # new and changed files (and renamed ones, to refresh their groups)
    renames: list[tuple[str, str]]  # (old path, new path)
    vanished: list[str]  # known files gone, renames left out
    known: int  # the source's documents before the pass
    still_failed: int  # unchanged files whose last ingest failed
    fingerprint: str  # the source's groups and sidecars now


@dataclass
class SyncReport:
    """One pass over one source; what the CLI prints and the audit trail records."""

    source: SourceSettings
    state: str = "ok"  # ok | braked | failed
    reason: str = ""
    was: str = "waiting"  # the source's state before the pass
    seen: int = 0
    renamed: list[tuple[str, str]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # symbolic links, not followed
    pending_deletes: int = 0
    failed: int = 0
    ingest: IngestReport | None = None

    @property
    def eventful(self) -> bool:
        """Whether the pass changed a file or the source's state (a quiet pass is not worth a
        record in the audit trail every `every`)."""
        return bool(self.changed) or self.state != self.was

    @property
    def changed(self) -> int:
        """Files ingested, updated, renamed or deleted by the pass."""
        counts = self.ingest.counts if self.ingest else {}
        return (counts.get("ingested", 0) + counts.get("updated", 0) + len(self.renamed)
                + len(self.deleted))


def walk(root: Path) -> Walk:
    """The folder's files (not sidecars, not hidden ones) with their size and mtime, and its
    symbolic links (to files, to folders, dangling) with their own, never followed: each goes
    through `ingest_paths` once, which records it as skipped (ingest/triage.py)."""
    found = Walk()
    if not root.is_dir():
        found.missing = "is missing" if not root.exists() else "is not a folder"
        return found
    errors: list[OSError] = []
    prefix = len(str(root)) + 1
    for dirpath, dirnames, filenames in os.walk(root, onerror=errors.append):
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in links]
        base = dirpath[prefix:].replace(os.sep, "/")
        for name in [*filenames, *links]:
            if name.startswith("."):
                continue
            rel = f"{base}/{name}" if base else name
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue  # gone between the listing and now: not seen
            link = stat.S_ISLNK(st.st_mode)
            if name.endswith(SIDECAR_SUFFIX):
                if stat.S_ISREG(st.st_mode):
                    found.sidecars.append((rel, st.st_size, st.st_mtime))
            elif link or stat.S_ISREG(st.st_mode):
                found.files[rel] = (st.st_size, st.st_mtime)
                if link:
                    found.links.append(rel)
    for error in errors:
        where = str(error.filename or root)
        if where == str(root):
            found.missing = f"cannot be read ({error.strerror})"
        else:
            found.unreadable.append(where[prefix:].replace(os.sep, "/"))
    found.links.sort()
    return found


def plan(source: SourceSettings, found: Walk, known: dict[str, DocRecord],
         previous: SyncState | None, settings: IngestSettings) -> Plan:
    """Compare the walk with the source's documents. Renames are found by `match_renames`."""
    fingerprint = _fingerprint(source, found, settings)
    refresh = previous is None or previous.fingerprint != fingerprint
    to_ingest, still_failed = [], 0
    for rel, (size, mtime) in found.files.items():
        old = known.get(rel)
        if old is None or refresh or (old.meta.size, old.meta.mtime) != (size, mtime):
            to_ingest.append(rel)
        elif old.status not in ("ok", SymbolicLink.status):
            still_failed += 1
    vanished = [rel for rel in known if rel not in found.files
                and not any(rel.startswith(d + "/") for d in found.unreadable)]
    return Plan(sorted(to_ingest), [], sorted(vanished), len(known), still_failed, fingerprint)


def _fingerprint(source: SourceSettings, found: Walk, settings: IngestSettings) -> str:
    """What gives the files their groups and metadata: the source's groups (else the folder
    mapping and the default groups) and its sidecars (names, sizes, mtimes). When it changes,
    every file goes through `ingest_paths`, which updates what changed in place (no re-parse)."""
    fallback = [] if source.groups else [settings.default_groups,
                                         sorted(settings.folder_groups.items())]
    key = json.dumps([source.groups, fallback, sorted(found.sidecars)])
    return hashlib.sha1(key.encode()).hexdigest()


def match_renames(root: Path, todo: Plan, found: Walk, known: dict[str, DocRecord]) -> None:
    """Pair vanished documents with new files of the same sha256 (renames, moves), hashing
    only new files whose size a vanished document has."""
    by_sha: dict[str, list[str]] = {}
    for rel in todo.vanished:
        if known[rel].meta.sha256:
            by_sha.setdefault(known[rel].meta.sha256, []).append(rel)
    sizes = {known[rel].meta.size for rels in by_sha.values() for rel in rels}
    for rel in todo.to_ingest:
        if rel in known or found.files[rel][0] not in sizes or rel in found.links:
            continue
        try:
            olds = by_sha.get(sha256_file(root / rel, root))
        except (OSError, KbError):
            continue
        if olds:
            todo.renames.append((olds.pop(0), rel))
    gone = {old for old, _ in todo.renames}
    todo.vanished = [rel for rel in todo.vanished if rel not in gone]


def brake_reason(source: SourceSettings, found: Walk, todo: Plan, share: float) -> str:
    """Why this pass must delete nothing ("" when it may delete)."""
    if not todo.vanished:
        return ""
    then = f"check the share is mounted, then `kb sync --confirm-deletes {source.name}`"
    if found.missing:
        return f"folder {source.path} {found.missing} while {todo.known} of its files are " \
               f"known; {then}"
    if not found.files:
        return f"folder {source.path} is empty while {todo.known} of its files are known; {then}"
    if len(todo.vanished) > share * todo.known:
        part = len(todo.vanished) / todo.known
        return (f"{len(todo.vanished)} of {todo.known} files vanished ({part:.0%} > "
                f"{share:.0%}); {then}")
    return ""


def sync_source(store: Store, source: SourceSettings, max_delete_share: float, now: float,
                confirm_deletes: bool = False) -> SyncReport:
    """One pass over `source` at time `now`; see the module docstring. A pass that cannot run
    (the write lock not had, the store failing, or any other error) is reported `failed` with
    the reason, so the loop that runs it goes on; the source's state is saved either way."""
    previous = store.ledger.sync_state(source.name)
    if previous is not None and previous.root != source.path:
        previous = None  # the name now stands for another folder
    report = SyncReport(source, was=previous.state if previous else "waiting")
    store.ledger.save_sync_state(replace(previous, state="running") if previous else
                                 SyncState(source.name, source.path, state="running"))
    try:
        root = Path(source.path)
        found = walk(root)
        todo = plan(source, found, store.ledger.source_documents(source.path), previous,
                    store.settings.ingest)
        if todo.to_ingest or todo.vanished:
            with store.writing(f"kb sync {source.name}"):
                known = store.ledger.source_documents(source.path)
                todo = plan(source, found, known, previous, store.settings.ingest)
                match_renames(root, todo, found, known)
                _act(store, source, found, todo, known, report, max_delete_share,
                     confirm_deletes)
        report.seen, report.skipped = len(found.files), found.links
        report.failed = todo.still_failed + len(found.unreadable) + _failed(report.ingest)
        if not found.missing and _notes(found) and report.state == "ok":
            report.reason = _notes(found)
        elif found.missing and not todo.known:
            report.state, report.reason = "failed", f"folder {source.path} {found.missing}; " \
                                                    "check the path and that it is mounted"
        _save(store, report, now, report.state, previous, todo.fingerprint)
    except (KbError, OSError) as exc:
        logger.warning("sync %s: %s", source.name, exc)
        report.state, report.reason = "failed", str(exc)
        _save(store, report, now, "failed", previous)
    except Exception as exc:  # noqa: BLE001  a `kb sync` or `kb worker` outlives one bad pass
        logger.exception("sync %s: the pass failed", source.name)
        report.state, report.reason = "failed", f"{type(exc).__name__}: {exc} (see the log)"
        _save(store, report, now, "failed", previous)
    return report


def _act(store: Store, source: SourceSettings, found: Walk, todo: Plan,
         known: dict[str, DocRecord], report: SyncReport, share: float, confirm: bool) -> None:
    """Under the write lock: renames, then new and changed files, then deletes or the brake."""
    root = Path(source.path)
    for old, new in todo.renames:
        _move(store, root, known[old], new, found.files[new])
        report.renamed.append((old, new))
    if todo.to_ingest:
        # every file (a refresh): the folder itself, so the run records one path, not each
        every = len(todo.to_ingest) == len(found.files)
        paths = [root] if every else [root / rel for rel in todo.to_ingest]
        report.ingest = ingest_paths(store, paths, source.groups or None, root=root)
    reason = brake_reason(source, found, todo, share)
    if reason and not confirm:
        logger.warning("sync %s: braked: %s", source.name, reason)
        report.state, report.reason, report.pending_deletes = "braked", reason, len(
            todo.vanished)
        return
    for rel in todo.vanished:
        delete_document(store, known[rel].meta.id)
        report.deleted.append(rel)


def _move(store: Store, root: Path, old: DocRecord, rel: str, size_mtime: tuple[int, float]
          ) -> None:
    """A renamed file's document to its new path; its vectors' metadata names the new id."""
    size, mtime = size_mtime
    meta = replace(old.meta, id=doc_id_for(str(root), rel), path=rel, size=size, mtime=mtime)
    ids = store.ledger.move_document(old.meta.id, meta)
    store.vectors.update_metadata(store.collection, ids,
                                  [group_metadata(meta.id, meta.groups)] * len(ids))
    logger.info("sync: %s renamed to %s (%d passages kept)", old.meta.path, rel, len(ids))


def _notes(found: Walk) -> str:
    """What a pass that went well says of its folder: the sub-folders it could not read, the
    symbolic links it skipped."""
    notes = [f"sub-folders that cannot be read: {', '.join(found.unreadable)}"
             ] if found.unreadable else []
    if found.links:
        more = f" and {len(found.links) - 5} more" if len(found.links) > 5 else ""
        notes.append(f"symbolic links skipped, not followed: {', '.join(found.links[:5])}{more}")
    return "; ".join(notes)


def _failed(ingest: IngestReport | None) -> int:
    """Files the pass could not ingest (links, skipped, are not failures)."""
    if ingest is None:
        return 0
    return sum(1 for o in ingest.outcomes
               if o.status != SymbolicLink.status and (o.outcome == "failed" or o.status != "ok"))


def _save(store: Store, report: SyncReport, now: float, state: str,
          previous: SyncState | None, fingerprint: str | None = None) -> None:
    """The pass's outcome as the source's state; due again at `now + every`."""
    source = report.source
    if fingerprint is None:  # a failed pass: the last good pass's fingerprint stays
        fingerprint = previous.fingerprint if previous else ""
    store.ledger.save_sync_state(SyncState(
        name=source.name, root=source.path, state=state, reason=report.reason,
        last_run=now, next_run=now + source.every_s, seen=report.seen, changed=report.changed,
        failed=report.failed, deleted=len(report.deleted), renamed=len(report.renamed),
        pending_deletes=report.pending_deletes, fingerprint=fingerprint))

