"""The admin tab's file handling and tables: uploads are checked by content (magic bytes), size
and name before they are stored under `<store>/uploads/<groups>/` and handed to `ingest_paths`.

    sniff_type(Path("x.bin")) -> "pdf" when the file starts with b"%PDF-"
    safe_name("../../etc/差旅 费 (2024).PDF", "pdf") -> "差旅_费_2024.pdf"
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import time
import unicodedata
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.config import Settings
from core.errors import KbError
from core.policy_dates import date_note
from core.types import DocRecord, IngestReport

DOC_HEADERS = ["id", "path", "status", "reason", "chunks", "groups", "version", "effective",
               "review by", "expires", "updated"]
REPORT_HEADERS = ["file", "outcome", "status", "chunks", "reason"]
FEEDBACK_HEADERS = ["when", "user", "rating", "comment", "question", "answer", "mode",
                    "cited chunks", "timings ms"]


@dataclass(frozen=True)
class Rejected:
    name: str
    reason: str


def sniff_type(path: Path) -> str | None:
    """"pdf" or "docx" from the file's content, whatever its name says; None otherwise."""
    with path.open("rb") as fh:
        head = fh.read(8)
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
        except (zipfile.BadZipFile, OSError):
            return None
        if "word/document.xml" in names and "[Content_Types].xml" in names:
            return "docx"
    return None


def safe_name(original: str, kind: str, max_bytes: int = 200) -> str:
    """A file name without folders, control or shell characters, ending in `.kind`, at most
    `max_bytes` UTF-8 bytes before the suffix (file systems allow 255 bytes in all)."""
    base = re.split(r"[\\/]", original)[-1]
    stem = base.rsplit(".", 1)[0] if "." in base else base
    stem = unicodedata.normalize("NFC", stem)
    stem = "".join(ch if (ch.isalnum() or ch in "-_.") else "_" for ch in stem)
    stem = re.sub(r"_+", "_", stem).strip("._-")
    stem = stem.encode()[:max_bytes].decode(errors="ignore").rstrip("._-") or "upload"
    return f"{stem}.{kind}"


def unique_target(folder: Path, name: str, taken: set[str]) -> Path:
    """`folder/name`, or `folder/stem-2.kind`, ... when another upload of this batch took it.
    A file already stored under the name is a new version of that document and is replaced."""
    stem, _, kind = name.rpartition(".")
    n, candidate = 1, name
    while candidate in taken:
        n += 1
        candidate = f"{stem}-{n}.{kind}"
    taken.add(candidate)
    return folder / candidate


def group_folder(groups: Sequence[str]) -> str:
    """`group_folder(["hr", "all"])` -> "all+hr" (groups are already checked names)."""
    return "+".join(sorted(groups))


def store_uploads(settings: Settings, files: Sequence[tuple[Path, str]],
                  groups: Sequence[str]) -> tuple[list[Path], list[Rejected]]:
    """Check each (temporary path, original name) and copy the good ones into the uploads
    folder of these groups; returns the stored paths and the rejected files with reasons."""
    limit = settings.ui.upload_max_mb * 1024 * 1024
    folder = settings.store_path() / "uploads" / group_folder(groups)
    stored: list[Path] = []
    rejected: list[Rejected] = []
    taken: set[str] = set()
    for temp, original in files:
        display = re.split(r"[\\/]", original)[-1]
        size = temp.stat().st_size
        if size > limit:
            rejected.append(Rejected(display, f"{size / 1e6:.1f} MB is over the "
                                              f"{settings.ui.upload_max_mb:g} MB upload limit"))
            continue
        kind = sniff_type(temp)
        if kind is None:
            rejected.append(Rejected(display, "not a PDF or DOCX file (checked by content)"))
            continue
        folder.mkdir(parents=True, exist_ok=True)
        target = unique_target(folder, safe_name(original, kind), taken)
        if not target.resolve().is_relative_to(folder.resolve()):
            raise KbError(f"{display}: unsafe file name")  # cannot happen after safe_name
        shutil.copyfile(temp, target)
        stored.append(target)
    return stored, rejected


def report_rows(report: IngestReport | None, rejected: Sequence[Rejected] = ()) -> list[list[Any]]:
    rows: list[list[Any]] = [[r.name, "rejected", "rejected", 0, r.reason] for r in rejected]
    if report is not None:
        rows += [[Path(o.path).name, o.outcome, o.status, o.chunks, o.reason]
                 for o in report.outcomes]
    return rows


def document_rows(records: Sequence[DocRecord], today: dt.date) -> list[list[Any]]:
    """The documents table; a reason also says why a document is not in force `today`, or
    that its review is overdue (core/policy_dates.py)."""
    return [[r.meta.id, r.meta.path, r.status,
             "; ".join(x for x in (r.reason, date_note(r.meta, today)) if x), r.chunk_count,
             ",".join(r.meta.groups), r.meta.version, r.meta.effective_date, r.meta.review_by,
             r.meta.expires, time.strftime("%Y-%m-%d %H:%M", time.localtime(r.updated_at))]
            for r in records]


def feedback_rows(items: Sequence[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for f in items:
        rows.append([time.strftime("%Y-%m-%d %H:%M", time.localtime(f["created_at"])), f["user"],
                     "👍" if f["rating"] > 0 else "👎", f["comment"], f["question"] or "",
                     (f["answer"] or "")[:300], f["mode"] or "",
                     ", ".join(json.loads(f["chunk_ids"] or "[]")), f["timings"] or ""])
    return rows
