"""Finding the files to ingest and describing them: their ids, hashes, sidecar metadata and
groups, before anything is parsed.

    for root, path in discover([Path("data/samples")]):     # folders walked, sorted
        meta = describe(settings, root, path, groups=None)  # a DocMeta, sha256 still empty
    doc_id_for("/srv/docs", "hr/leave.pdf") -> "ba39e76144b587a7"
    sha256_file(Path("empty.txt")) -> "e3b0c442…7852b855"      # hex, 64 digits
    with open_beneath(Path("/srv/hr"), Path("/srv/hr/2024/leave.pdf")) as fh: ...

Symbolic links are never followed below a folder being ingested: a link in a shared folder can
reach any file the service can read, other groups' files among them. `discover` yields a link
(to a file, a folder or nothing) like a file, for the pipeline to record as skipped;
`open_beneath`, which every read of a file's bytes goes through, refuses a link at or below the
folder (`SymbolicLink`), so a file swapped for a link, or a folder above it swapped for one,
after the walk is not read either.

A file's metadata can come from a sidecar beside it, `NAME.meta.toml` or `STEM.meta.toml`, with
the keys in SIDECAR_KEYS (dates as YYYY-MM-DD: `effective`, or its older name `effective_date`,
`review_by`, `expires`; core/policy_dates.py); its groups come from `--groups`, else its
sidecar, else the longest matching `ingest.folder_groups` prefix, else `ingest.default_groups`.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import tomllib
from collections.abc import Iterator, Sequence
from io import BufferedReader
from pathlib import Path
from typing import Any

from core.config import Settings
from core.errors import IngestError, KbError, SymbolicLink
from core.policy_dates import DATE_FIELDS, parse_day
from core.types import DocMeta

SIDECAR_SUFFIX = ".meta.toml"
SIDECAR_KEYS = {"title", "version", "series", "groups", "effective_date", *DATE_FIELDS}


def doc_id_for(root: str, rel: str) -> str:
    """A document's id, the same for the same file under the same root each run.

    doc_id_for("/srv/docs", "hr/leave.pdf") -> "ba39e76144b587a7"
    """
    return hashlib.sha1(f"{root}\0{rel}".encode()).hexdigest()[:16]


def link_error(rel: str) -> SymbolicLink:
    """Why a link is skipped, named by its path under the folder."""
    return SymbolicLink(
        f"{rel}: a symbolic link, not followed (a link can reach files outside the folder, "
        "other groups' among them); put the file itself there instead"
    )


def open_beneath(root: Path, path: Path) -> BufferedReader:
    """`path` opened for reading through real folders below `root`: a symbolic link at or
    below `root` is not followed (SymbolicLink naming it), and only a regular file is opened
    (OSError otherwise). `root` itself may be, or lie under, a link: the operator chose it."""
    parts = path.relative_to(root).parts
    if not parts or ".." in parts:
        raise OSError(errno.EINVAL, "not a file below its folder", str(path))
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for depth, part in enumerate(parts):
            last = depth == len(parts) - 1
            flags = os.O_RDONLY | os.O_NOFOLLOW | (os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                child = os.open(part, flags, dir_fd=fd)
            except OSError:
                if stat.S_ISLNK(os.stat(part, dir_fd=fd, follow_symlinks=False).st_mode):
                    raise link_error("/".join(parts[: depth + 1])) from None
                raise
            os.close(fd)
            fd = child
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def sha256_file(path: Path, root: Path | None = None) -> str:
    """The file's SHA-256 in hex, read a MiB at a time through `open_beneath` (`root`: the
    folder it is known under; by default the one it is in)."""
    path = path.absolute()
    digest = hashlib.sha256()
    with open_beneath(root or path.parent, path) as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _sidecar_path(path: Path) -> Path | None:
    """`NAME.meta.toml` or `STEM.meta.toml` beside the file, whichever is there first."""
    for candidate in (
        path.with_name(path.name + SIDECAR_SUFFIX),
        path.with_name(path.stem + SIDECAR_SUFFIX),
    ):
        if candidate.is_file() and not candidate.is_symlink():
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
    sync, ingest/sync/folder.py, keep the ids they have under that folder). A symbolic link,
    given or met in a folder, is yielded as it is, never followed: the pipeline records it as
    skipped."""
    for given in paths:
        path = given.expanduser()
        if root is None and path.is_symlink() and not path.is_dir():
            path = path.parent.resolve() / path.name  # a link given as a file: itself
        elif root is None:
            path = path.resolve()  # a folder given may be a link: the operator chose it
        if path.is_symlink() and path != root:  # a source's folder may be a link
            yield root or path.parent, path
        elif path.is_file():
            yield root or path.parent, path
        elif path.is_dir():
            yield from _walk(path)
        else:
            raise KbError(f"{given}: no such file or folder (check the path)")


def _walk(folder: Path) -> Iterator[tuple[Path, Path]]:
    """The files of `folder` and below, sorted, with the links met (to files, to folders,
    dangling), which are not followed."""
    for dirpath, dirnames, filenames in os.walk(folder):
        links = [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in links)
        for name in sorted([*filenames, *links]):
            if not name.startswith(".") and not name.endswith(SIDECAR_SUFFIX):
                yield folder, Path(dirpath) / name


def describe(settings: Settings, root: Path, path: Path, groups: Sequence[str] | None) -> DocMeta:
    """The file as the ledger will know it, before it is parsed: its id, its path under `root`,
    size, mtime, groups and sidecar fields (sha256 left empty: computed only when needed)."""
    rel = path.relative_to(root).as_posix()
    st = path.lstat()  # a link's own: it is recorded as skipped, never followed
    sidecar = read_sidecar(path)
    return DocMeta(
        id=doc_id_for(str(root), rel),
        path=rel,
        root=str(root),
        sha256="",
        size=st.st_size,
        mtime=st.st_mtime,
        title=str(sidecar.get("title", "")),
        groups=_groups_for(settings, rel, groups, sidecar),
        version=str(sidecar.get("version", "")),
        effective_date=sidecar.get("effective", ""),
        series=str(sidecar.get("series", "")),
        review_by=sidecar.get("review_by", ""),
        expires=sidecar.get("expires", ""),
    )
