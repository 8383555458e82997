"""System packages some tests need (Chromium and poppler, Tesseract and a CJK font, the PostgreSQL
server, OpenLDAP's slapd): without one, the test skips saying what to install, except under
KB_REQUIRE_SYSTEM_DEPS=1, which .ci/run sets after installing them: there a missing package
means its install failed, and the test fails instead of turning into a skip that CI would pass.

    if shutil.which("tesseract") is None:
        skip_or_fail("Tesseract is not installed (scripts/install_ocr.sh)")
    if tool("pdftoppm", "poppler-utils (scripts/install_chromium.sh)"): ...
"""

from __future__ import annotations

import os
import shutil
from typing import NoReturn

import pytest

REQUIRE = "KB_REQUIRE_SYSTEM_DEPS"


def required() -> bool:
    return os.environ.get(REQUIRE) == "1"


def skip_or_fail(reason: str) -> NoReturn:
    """Skip the test with `reason`, or fail it under KB_REQUIRE_SYSTEM_DEPS=1."""
    if required():
        pytest.fail(f"{reason} ({REQUIRE}=1: this machine was to have it installed)",
                    pytrace=False)
    pytest.skip(reason)


def tool(name: str, package: str) -> bool:
    """Whether the program `name` is on PATH, for a check that runs only where it is; under
    KB_REQUIRE_SYSTEM_DEPS=1 its absence fails the test."""
    if shutil.which(name):
        return True
    if required():
        skip_or_fail(f"{name} is not installed: {package}")
    return False
