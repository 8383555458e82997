"""`[[sources]]` and `[sync]` as config.toml gives them: defaults, paths, intervals, and one
clear ConfigError for each kind of bad entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config import load_settings
from core.errors import ConfigError
from core.settings.sources import check_apart_from_store, parse_every


def load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "c.toml"
    path.write_text(text, encoding="utf-8")
    return load_settings(path, environ={})


def test_sources_with_defaults_and_relative_paths(tmp_path: Path) -> None:
    settings = load(tmp_path, """
[sync]
max_delete_share = 0.5

[[sources]]
path = "shares/HR Policies"
every = "30s"

[[sources]]
name = "finance"
path = "/srv/finance/"
groups = ["finance", "all"]
every = 3600
""")
    hr, finance = settings.sources
    assert (hr.name, hr.path, hr.groups, hr.every_s) == (
        "HR_Policies", str((tmp_path / "shares" / "HR Policies").resolve()), (), 30.0)
    assert (finance.name, finance.path, finance.groups, finance.every_s) == (
        "finance", "/srv/finance", ("all", "finance"), 3600.0)
    assert settings.sync.max_delete_share == 0.5
    assert load(tmp_path, "").sources == ()


@pytest.mark.parametrize("value, seconds", [("30s", 30), ("15m", 900), ("1h", 3600),
                                            ("1d", 86400), (90, 90), ("1.5h", 5400)])
def test_every(value: object, seconds: float) -> None:
    assert parse_every(value) == seconds


@pytest.mark.parametrize("entry, message", [
    ('every = "1h"', r"\[\[sources\]\] #1: no path"),
    ('path = "/srv/a"\nevery = "soon"', r"every = 'soon': use \"30s\""),
    ('path = "/srv/a"\nevery = 0', "every = 0"),
    ('path = "/srv/a"\ngroups = ["HR!"]', "group 'HR!'"),
    ('path = "/srv/a"\nevry = "1h"', "unknown key 'evry'"),
    ('path = "/srv/a"\nname = "a b"', "name 'a b'"),
])
def test_a_bad_source_is_named(tmp_path: Path, entry: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(tmp_path, f"[[sources]]\n{entry}\n")


def test_duplicate_names_and_nested_folders_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="name 'hr' is used twice"):
        load(tmp_path, '[[sources]]\npath = "/srv/a/hr"\n[[sources]]\npath = "/srv/b/hr"\n')
    with pytest.raises(ConfigError, match=r"'hr' \(/srv/a/hr\) lies inside 'a' \(/srv/a\)"):
        load(tmp_path, '[[sources]]\npath = "/srv/a"\n[[sources]]\npath = "/srv/a/hr"\n')
    with pytest.raises(ConfigError, match="must be"):
        load(tmp_path, 'sources = "/srv/a"\n')


def test_a_source_overlapping_the_store_is_refused(tmp_path: Path) -> None:
    """The store folder holds the app's uploads: a source inside it, or around it, would take
    them in as its own files."""
    store = tmp_path / "kbstore"
    inside = load(tmp_path, '[[sources]]\npath = "kbstore/uploads"\n').sources
    with pytest.raises(ConfigError, match="overlaps the store folder"):
        check_apart_from_store(inside, store)
    around = load(tmp_path, f'[[sources]]\npath = "{tmp_path}"\n').sources
    with pytest.raises(ConfigError, match="overlaps the store folder"):
        check_apart_from_store(around, store)
    apart = load(tmp_path, '[[sources]]\npath = "policies"\n').sources
    check_apart_from_store(apart, store)
