"""The folders kept in sync (`[[sources]]`) and the brake on their deletes (`[sync]`);
core/config.py reads them with the other sections (docs/owners.md, "Folders kept in sync").

    [[sources]]
    path = "/mnt/hr-share/policies"
    groups = ["hr"]
    every = "15m"

    parse_every("15m") -> 900.0
    read_sources([{"path": "/srv/hr", "every": "1h"}], Path("/etc/kb"))[0].name -> "hr"

A source is found by its resolved folder: the documents whose root is that folder are its own
(ingest/sync/folder.py), so no source ever touches an upload or another source's documents. Two
sources where one folder lies inside the other would share files, and a source around or inside
the store folder would take in the uploads: both are refused with a ConfigError.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.access import parse_groups
from core.errors import ConfigError, KbError
from core.settings.fields import doc

SOURCE_KEYS = {"name", "path", "groups", "every"}
DEFAULT_EVERY = "15m"
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass(frozen=True)
class SyncSettings:
    max_delete_share: float = field(
        default=0.2, metadata=doc("more of a source's files vanishing at once deletes nothing "
                                  "(the brake); 1.0: off"))


@dataclass(frozen=True)
class SourceSettings:
    """One `[[sources]]` entry: its name, its folder (absolute, resolved), the groups given to
    its files (empty: sidecars, `ingest.folder_groups`, `ingest.default_groups` decide, as for
    `kb ingest`) and how often it is looked at, in seconds."""

    name: str
    path: str
    groups: tuple[str, ...] = ()
    every_s: float = 900.0


def parse_every(value: Any, where: str = "every") -> float:
    """Seconds from "30s", "15m", "1h", "1d" or a number of seconds; ConfigError otherwise.

    parse_every("1h") -> 3600.0; parse_every(90) -> 90.0
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", value if isinstance(value, str)
                         else "")
    if match and float(match.group(1)) > 0:
        return float(match.group(1)) * _UNITS[match.group(2)]
    raise ConfigError(f'{where} = {value!r}: use "30s", "15m", "1h", "1d" or seconds (above 0)')


def read_sources(entries: Any, base_dir: Path) -> tuple[SourceSettings, ...]:
    """The `[[sources]]` array of a config file as SourceSettings; relative paths start at the
    config's folder. A missing path, an unknown key, a bad `every` or group, a name used twice
    and folders inside one another are ConfigErrors naming the entry."""
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError("config: sources must be [[sources]] tables, each with a path")
    sources = [_source(i + 1, entry, base_dir) for i, entry in enumerate(entries)]
    names = [s.name for s in sources]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"[[sources]] name {name!r} is used twice: give each source a "
                              "name of its own")
    for a in sources:
        for b in sources:
            if a is not b and _inside(a.path, b.path):
                raise ConfigError(
                    f"[[sources]] {a.name!r} ({a.path}) lies inside {b.name!r} ({b.path}): "
                    "their files would be synced twice; keep source folders apart")
    return tuple(sources)


def _source(number: int, entry: dict[str, Any], base_dir: Path) -> SourceSettings:
    where = f"[[sources]] #{number}"
    unknown = sorted(set(entry) - SOURCE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: "
                          f"{', '.join(sorted(SOURCE_KEYS))})")
    raw = entry.get("path")
    if not isinstance(raw, str) or not raw.strip():
        raise ConfigError(f"{where}: no path; give the folder to keep in sync, "
                          'path = "/mnt/share/policies"')
    path = Path(raw).expanduser()
    path = (path if path.is_absolute() else base_dir / path).resolve()
    name = entry.get("name", re.sub(r"[^\w.-]+", "_", path.name).strip("_")[:64] or "source")
    if not isinstance(name, str) or not re.fullmatch(r"[\w.-]{1,64}", name):
        raise ConfigError(f"{where} ({path}): name {name!r}: use 1-64 letters, digits, "
                          "'_', '.' or '-'")
    groups = entry.get("groups", [])
    try:
        parsed = parse_groups(groups if isinstance(groups, (str, list)) else [str(groups)])
    except KbError as exc:
        raise ConfigError(f"[[sources]] {name!r}: {exc}") from exc
    every = parse_every(entry.get("every", DEFAULT_EVERY), f"[[sources]] {name!r} every")
    return SourceSettings(name, str(path), parsed, every)


def _inside(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or lies beneath it."""
    return Path(path).is_relative_to(Path(folder))


def check_apart_from_store(sources: Sequence[SourceSettings], store: Path) -> None:
    """ConfigError when a source's folder lies inside the store folder (its uploads) or holds
    it: a sync would take the app's uploads in as the source's own files."""
    store = store.resolve()
    for source in sources:
        if _inside(source.path, str(store)) or _inside(str(store), source.path):
            raise ConfigError(
                f"[[sources]] {source.name!r} ({source.path}) overlaps the store folder "
                f"{store}, which holds the uploads: point the source at a folder of its own")
