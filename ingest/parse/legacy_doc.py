"""Legacy Word `.doc` -> `.docx` through LibreOffice headless, when `soffice` is installed.

    doc_to_docx(Path("old.doc"), Path("/tmp/x")) -> Path("/tmp/x/old.docx")

LibreOffice is optional (Debian: `libreoffice-writer-nogui`); without it a `.doc` gets status
`unsupported` with the hint to convert it. The conversion runs in the parse worker, under the
same per-file time limit as any parse.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
from pathlib import Path

from core.errors import UnsupportedFile

logger = logging.getLogger(__name__)

CONVERT_TIMEOUT_S = 120.0
HINT = "convert to .docx (Word: Save As .docx; or `soffice --headless --convert-to docx`)"
INSTALL = "install LibreOffice (Debian: libreoffice-writer-nogui) to have it converted"


def soffice() -> str | None:
    """The LibreOffice executable, or None."""
    return shutil.which("soffice") or shutil.which("libreoffice")


def doc_to_docx(path: Path, folder: Path) -> Path:
    """The `.docx` LibreOffice makes of `path` in `folder`; UnsupportedFile when LibreOffice is
    missing or cannot convert it."""
    exe = soffice()
    if exe is None:
        raise UnsupportedFile(f"{path.name}: legacy Word .doc (or another old Office format): "
                              f"{HINT} and ingest that, or {INSTALL}")
    source = folder / f"{path.stem}.doc"  # LibreOffice names its output after its input
    shutil.copyfile(path, source)
    profile = folder / "profile"  # a private profile: parallel workers do not share a lock
    command = [exe, f"-env:UserInstallation=file://{profile}", "--headless", "--norestore",
               "--convert-to", "docx", "--outdir", str(folder), str(source)]
    try:
        done = subprocess.run(command, capture_output=True, text=True,
                              timeout=CONVERT_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UnsupportedFile(f"{path.name}: legacy Word .doc: LibreOffice failed ({exc}); "
                              f"{HINT} and ingest that") from exc
    target = source.with_suffix(".docx")
    if done.returncode != 0 or not target.exists():
        said = (done.stderr.strip().splitlines() or ["no output"])[-1][:200]
        raise UnsupportedFile(f"{path.name}: legacy Word .doc (or another old Office format): "
                              f"LibreOffice could not convert it ({said}); {HINT} and ingest that")
    logger.info("%s: converted from .doc by LibreOffice", path.name)
    return target
