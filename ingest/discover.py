"""Finding the files to ingest and describing them: their ids, hashes, sidecar metadata and
groups, before anything is parsed.

    for root, path in discover([Path("data/samples")]):     # folders walked, sorted
        meta = describe(settings, root, path, groups=None)  # a DocMeta, sha256 still empty
    doc_id_for("/srv/docs", "hr/leave.pdf") -> "ba39e76144b587a7"
    sha256_file(Path("empty.txt")) -> "e3b0c442…7852b855"      # hex, 64 digits

A file's metadata can come from a sidecar beside it, `NAME.meta.toml` or `STEM.meta.toml`, with
the keys in SIDECAR_KEYS (dates as YYYY-MM-DD: `effective`, or its older name `effective_date`,
`review_by`, `expires`; core/policy_dates.py); its groups come from `--groups`, else its
sidecar, else the longest matching `ingest.folder_groups` prefix, else `ingest.default_groups`.
"""

from __future__ import annotations

import hashlib
import os
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from core.config import Settings
from core.errors import IngestError, KbError
from core.policy_dates import DATE_FIELDS, parse_day
from core.types import DocMeta

SIDECAR_SUFFIX = ".meta.toml"
SIDECAR_KEYS = {"title", "version", "series", "groups", "effective_date", *DATE_FIELDS}


def doc_id_for(root: str, rel: str) -> str:
    """A document's id, the same for the same file under the same root each run.

    doc_id_for("/srv/docs", "hr/leave.pdf") -> "ba39e76144b587a7"
    """
    return hashlib.sha1(f"{root}\0{rel}".encode()).hexdigest()[:16]


def sha256_file(path: Path) -> str:
    """The file's SHA-256 in hex, read a MiB at a time."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sidecar_path(path: Path) -> Path | None:
    """`NAME.meta.toml` or `STEM.meta.toml` beside the file, whichever is there first."""
    for candidate in (
        path.with_name(path.name + SIDECAR_SUFFIX),
        path.with_name(path.stem + SIDECAR_SUFFIX),
    ):
        if candidate.is_file():
            return candidate
    return None


def read_sidecar(path: Path) -> dict[str, Any]:
    """The keys of the file's sidecar, if it has one (IngestError naming a bad one)."""
    candidate = _sidecar_path(path)
    if candidate is None:
        return {}
    try:
        data = tomllib.loads(candidate.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise IngestError(
            f"{candidate.name}: sidecar is not valid TOML ({exc}); fix or remove it"
        ) from exc
    unknown = set(data) - SIDECAR_KEYS
    if unknown:
        raise IngestError(
            f"{candidate.name}: unknown sidecar key {sorted(unknown)[0]!r} "
            f"(known: {', '.join(sorted(SIDECAR_KEYS))})"
        )
    return _sidecar_values(candidate.name, data)


def _sidecar_values(name: str, data: dict[str, Any]) -> dict[str, Any]:
    """A sidecar's keys as `describe` takes them: lists as tuples, dates checked and written
    YYYY-MM-DD, `effective_date` read as `effective` (one meaning, two names)."""
    if "effective" in data and "effective_date" in data:
        raise IngestError(f"{name}: both effective and effective_date; keep one (effective)")
    data = dict(data)
    if "effective_date" in data:
        data["effective"] = data.pop("effective_date")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key in DATE_FIELDS:
            values[key] = parse_day(value, f"{name}: {key}", IngestError)
        else:
            values[key] = tuple(value) if isinstance(value, list) else str(value)
    return values


def _groups_for(
    settings: Settings, rel: str, explicit: Sequence[str] | None, sidecar: dict[str, Any]
) -> tuple[str, ...]:
    """--groups, else the sidecar's groups, else the longest matching folder mapping, else the
    default groups."""
    if explicit:
        return tuple(sorted(set(explicit)))
    if sidecar.get("groups"):
        return tuple(sorted(set(sidecar["groups"])))
    best = ""
    for prefix in settings.ingest.folder_groups:
        norm = prefix.strip("/") + "/"
        if rel.startswith(norm) and len(norm) > len(best):
            best = prefix
    groups = settings.ingest.folder_groups[best] if best else settings.ingest.default_groups
    return tuple(sorted(set(groups)))


def discover(paths: Sequence[Path], root: Path | None = None) -> Iterator[tuple[Path, Path]]:
    """(root, file) pairs: a folder is walked (hidden entries and sidecars skipped), a file is
    its own root's only member, or a member of `root` when given (the files of a folder kept in
    sync, ingest/sync/folder.py, keep the ids they have under that folder)."""
    for given in paths:
        # under `root`, a file keeps its path there, even a link to a file elsewhere
        path = given.expanduser() if root else given.expanduser().resolve()
        if path.is_file():
            yield root or path.parent, path
        elif path.is_dir():
            for dirpath, dirnames, filenames in os.walk(path):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for name in sorted(filenames):
                    if not name.startswith(".") and not name.endswith(SIDECAR_SUFFIX):
                        yield path, Path(dirpath) / name
        else:
            raise KbError(f"{given}: no such file or folder (check the path)")


def describe(settings: Settings, root: Path, path: Path, groups: Sequence[str] | None) -> DocMeta:
    """The file as the ledger will know it, before it is parsed: its id, its path under `root`,
    size, mtime, groups and sidecar fields (sha256 left empty: computed only when needed)."""
    rel = path.relative_to(root).as_posix()
    stat = path.stat()
    sidecar = read_sidecar(path)
    return DocMeta(
        id=doc_id_for(str(root), rel),
        path=rel,
        root=str(root),
        sha256="",
        size=stat.st_size,
        mtime=stat.st_mtime,
        title=str(sidecar.get("title", "")),
        groups=_groups_for(settings, rel, groups, sidecar),
        version=str(sidecar.get("version", "")),
        effective_date=sidecar.get("effective", ""),
        series=str(sidecar.get("series", "")),
        review_by=sidecar.get("review_by", ""),
        expires=sidecar.get("expires", ""),
    )
