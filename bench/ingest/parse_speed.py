"""PDF parse speed in pages/s: with table detection, without it, and OCR of page images.

Parses every PDF under the folder in this process (no workers, no embedding), best of
`--repeat` runs. `--ocr` instead renders the second page of each PDF (up to `--pages`) as an
image-only PDF and times OCR on those (Tesseract, `ingest.ocr_dpi`, `ingest.ocr_languages`).

    .venv/bin/python -m bench.ingest.parse_speed ../shared/eval/public/docs
    .venv/bin/python -m bench.ingest.parse_speed ../shared/eval/public/docs --ocr --pages 8
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from core.config import load_settings
from ingest.parse.ocr import OcrOptions, image_only_pdf, ocr_options
from ingest.parse.pdf import parse_pdf

REPO = Path(__file__).resolve().parents[2]


def _timed(paths: list[Path], repeat: int, **options: object) -> tuple[float, int]:
    best, pages = float("inf"), 0
    for _ in range(repeat):
        start, pages = time.perf_counter(), 0
        for path in paths:
            pages += parse_pdf(path, **options).pages or 0  # type: ignore[arg-type]
        best = min(best, time.perf_counter() - start)
    return best, pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ocr", action="store_true", help="time OCR of rendered pages")
    parser.add_argument("--pages", type=int, default=8, help="with --ocr: pages to OCR")
    args = parser.parse_args()
    paths = sorted(args.folder.rglob("*.pdf"))
    settings = load_settings(REPO / "config.toml").ingest
    out: dict[str, object] = {"folder": str(args.folder), "pdfs": len(paths)}
    if args.ocr:
        ocr = ocr_options(settings) or OcrOptions()
        with tempfile.TemporaryDirectory() as tmp:
            scans = [image_only_pdf(path, 1, Path(tmp), ocr.dpi) for path in paths[: args.pages]]
            seconds, pages = _timed(scans, 1, tables=False, ocr=ocr)
        out["ocr"] = {"dpi": ocr.dpi, "languages": ocr.languages, "pages": pages,
                      "seconds": round(seconds, 2), "pages_per_s": round(pages / seconds, 3)}
    else:
        for name, tables in (("tables_off", False), ("tables_on", True)):
            seconds, pages = _timed(paths, args.repeat, tables=tables)
            out[name] = {"pages": pages, "seconds": round(seconds, 2),
                         "pages_per_s": round(pages / seconds, 1)}
    print(json.dumps(out, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
