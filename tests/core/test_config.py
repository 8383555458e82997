from pathlib import Path

import pytest

from core.config import Settings, load_settings
from core.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def test_shipped_config_equals_the_defaults():
    """config.toml documents every key with its default value."""
    shipped = load_settings(REPO / "config.toml", environ={})
    defaults = load_settings(None, environ={})
    assert shipped.llm == defaults.llm
    assert shipped.retrieve == defaults.retrieve
    assert shipped.embed == defaults.embed
    assert shipped.ingest.folder_groups == {"hr-only": ("hr",)}


def test_every_key_is_commented():
    lines = (REPO / "config.toml").read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if "=" in line and not line.lstrip().startswith("#") and not line.startswith('"'):
            assert lines[i - 1].lstrip().startswith("#"), f"config.toml line {i + 1} has no comment"


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
