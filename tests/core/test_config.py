import dataclasses
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from core.config import NOT_SECTIONS, Settings, load_settings
from core.errors import ConfigError
from core.settings.fields import is_tuning

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config.toml"
TUNING_DOC = REPO / "docs" / "tuning.md"
SECTIONS = [f.name for f in dataclasses.fields(Settings) if f.name not in NOT_SECTIONS]
SHIPPED_FOLDER_GROUPS = {"hr-only": ("hr",)}  # the samples' hr-only folder, not a default


def settings_fields(tuning: bool) -> dict[str, dataclasses.Field[Any]]:
    """"section.key" -> field, for the operator keys (False) or the research knobs (True)."""
    found = {}
    for section in SECTIONS:
        for f in dataclasses.fields(getattr(Settings(), section)):
            if is_tuning(f) == tuning:
                found[f"{section}.{f.name}"] = f
    return found


def config_keys(text: str) -> dict[str, list[str]]:
    """"section.key" -> the comment lines directly above it, for each key of a config file;
    a sub-table header `[ingest.folder_groups]` is the key folder_groups of [ingest].

    config_keys("[llm]\\n# Port.\\nport = 1\\n") -> {"llm.port": ["# Port."]}
    """
    lines = text.splitlines()
    keys: dict[str, list[str]] = {}
    section, subtable = "", False
    for i, line in enumerate(lines):
        header = re.match(r"^\[([\w.]+)\]\s*$", line)
        if header:
            section, _, sub = header.group(1).partition(".")
            subtable = bool(sub)
            if not subtable:
                continue
            key = f"{section}.{sub}"
        else:
            assignment = re.match(r"^(\w+)\s*=", line)
            if not assignment or subtable:
                continue
            key = f"{section}.{assignment.group(1)}"
        above = i
        while above > 0 and lines[above - 1].lstrip().startswith("#"):
            above -= 1
        keys[key] = lines[above:i]
    return keys


def tuning_doc_defaults(text: str) -> dict[str, str]:
    """"section.key" -> the default as written in a heading of docs/tuning.md.

    tuning_doc_defaults("### `retrieve.rrf_k = 60`\\n") -> {"retrieve.rrf_k": "60"}
    """
    return {m[1]: m[2] for m in re.finditer(r"^### `(\w+\.\w+) = (.+?)`", text, flags=re.M)}


def test_shipped_config_equals_the_defaults():
    """Every section of config.toml loads to the defaults in code (the folder mapping of the
    samples aside), so what an operator reads there is what runs."""
    shipped = load_settings(CONFIG, environ={})
    defaults = load_settings(None, environ={})
    for section in SECTIONS:
        ours = getattr(shipped, section)
        if section == "ingest":
            assert ours.folder_groups == SHIPPED_FOLDER_GROUPS
            ours = dataclasses.replace(ours, folder_groups={})
        assert ours == getattr(defaults, section), f"config.toml [{section}] differs from code"


def test_every_operator_key_is_in_config_with_a_one_line_comment():
    """config.toml shows every key an operator sets, each under one comment line of at most
    100 characters (what it is, its unit, when to change it; the long story lives in docs/)."""
    keys = config_keys(CONFIG.read_text(encoding="utf-8"))
    for name in settings_fields(tuning=False):
        assert name in keys, f"{name}: an operator key missing from config.toml"
    for name, comment in keys.items():
        assert len(comment) == 1, f"config.toml {name}: {len(comment)} comment lines, not 1"
        assert len(comment[0]) <= 100, f"config.toml {name}: a comment over 100 characters"


def test_no_research_knob_is_in_config():
    """Research knobs keep their defaults in code; config.toml holds what an operator sets."""
    data = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    shipped = {f"{s}.{k}" for s, table in data.items() for k in table}
    assert sorted(shipped & set(settings_fields(tuning=True))) == []


def test_every_research_knob_is_in_the_tuning_doc_with_its_default():
    """docs/tuning.md has one heading `section.key = default` per research knob, no other, and
    each default as in code."""
    documented = tuning_doc_defaults(TUNING_DOC.read_text(encoding="utf-8"))
    knobs = settings_fields(tuning=True)
    assert sorted(set(knobs) - set(documented)) == [], "research knobs missing from docs/tuning.md"
    assert sorted(set(documented) - set(knobs)) == [], "docs/tuning.md names no such knob"
    for name, written in documented.items():
        value = tomllib.loads(f"v = {written}")["v"]
        assert value == knobs[name].default, f"docs/tuning.md: {name} = {written}, not as in code"


def changed(value: Any) -> tuple[Any, str]:
    """A value of the same type that differs from `value`, and how TOML writes it.

    changed(2) -> (3, "3"); changed(False) -> (True, "true")
    """
    if isinstance(value, bool):
        return not value, str(not value).lower()
    if isinstance(value, (int, float)):
        return value + 1, repr(value + 1)
    return value + "-x", json.dumps(value + "-x")


def test_a_config_file_may_still_set_research_knobs(tmp_path):
    """docs/tuning.md tells its readers to set knobs in config.toml or by KB_ variables: the
    loader takes every one, from a file and from the environment."""
    knobs = {name: changed(f.default) for name, f in settings_fields(tuning=True).items()}
    text = ""
    for section in SECTIONS:
        text += f"[{section}]\n" + "".join(
            f"{name.split('.')[1]} = {written}\n"
            for name, (_, written) in knobs.items()
            if name.startswith(section + ".")
        )
    path = tmp_path / "c.toml"
    path.write_text(text)
    from_file = load_settings(path, environ={})
    environ = {"KB_" + name.replace(".", "_").upper(): w for name, (_, w) in knobs.items()}
    from_env = load_settings(None, environ=environ)
    for name, (value, _) in knobs.items():
        section, key = name.split(".")
        assert getattr(getattr(from_file, section), key) == value, f"{name} from a file"
        assert getattr(getattr(from_env, section), key) == value, f"{name} from the environment"


def test_partial_config_keeps_other_defaults(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[llm]\nport = 9001\n")
    settings = load_settings(path, environ={})
    assert settings.llm.port == 9001
    assert settings.llm.max_model_len == Settings().llm.max_model_len


@pytest.mark.parametrize(
    "text, message",
    [
        ("[llm]\nprot = 1\n", "unknown key 'prot'"),
        ("[lm]\n", "unknown section [lm]"),
        ("[llm]\nport = 'x'\n", "llm.port"),
        ("[llm\n", "not valid TOML"),
    ],
)
def test_bad_config_names_the_problem(tmp_path, text, message):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_settings(path, environ={})


def test_environment_overrides(tmp_path):
    settings = load_settings(None, environ={"KB_LLM_URL": "http://h:1/v1", "KB_LLM_PORT": "9"})
    assert settings.llm.url == "http://h:1/v1"
    assert settings.llm.port == 9


def test_missing_config_file(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "nope.toml", environ={})


def test_a_removed_key_is_ignored_with_a_warning(tmp_path, caplog):
    """retrieve.feedback_weight left the code (docs/tuning.md, "Removed"): an old config file
    that still sets it loads, and its operator is told to delete it."""
    path = tmp_path / "c.toml"
    path.write_text("[retrieve]\nfeedback_weight = 0.5\ntop_k = 7\n")
    settings = load_settings(path, environ={})
    assert settings.retrieve.top_k == 7 and not hasattr(settings.retrieve, "feedback_weight")
    assert "retrieve.feedback_weight is ignored" in caplog.text
