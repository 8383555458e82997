"""The sample handbook: scripts/make_samples.py writes what data/samples holds, and its
questions' gold quotes are where they say they are."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import docx
import pytest
from pypdf import PdfReader

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "data" / "samples" / "docs"

EXPECTED = {
    "Employee-Leave-Policy.pdf",
    "New-Hire-Onboarding-Guide.pdf",
    "IT-Security-Policy.docx",
    "Code-of-Conduct.docx",
    "差旅费管理办法-2023.pdf",
    "差旅费管理办法-2023.meta.toml",
    "差旅费管理办法-2024.pdf",
    "差旅费管理办法-2024.meta.toml",
    "考勤与加班管理办法.pdf",
    "员工福利手册.docx",
    "日常费用报销规定.docx",
    "hr-only/薪酬等级表.docx",
    "hr-only/Compensation-Review-Guidelines.pdf",
}

# Phrases that pypdf must give back from each Chinese PDF, page by page as printed.
ZH_PHRASES = {
    "差旅费管理办法-2023.pdf": [
        "一线城市住宿标准为每晚不超过 700 元。",
        "北京、上海、广州、深圳",
        "出差结束后 60 日内",
    ],
    "差旅费管理办法-2024.pdf": [
        "一线城市住宿标准为每晚不超过 800 元。",
        "每人每天 120 元",
        "《差旅费管理办法（2023 年版）》同时废止",
    ],
    "考勤与加班管理办法.pdf": ["第四章 加班管理", "日工资的 300% 支付加班工资", "第 1 页"],
}


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def pdf_pages(path: Path) -> list[str]:
    return [page.extract_text() for page in PdfReader(path).pages]


def docx_text(path: Path) -> str:
    document = docx.Document(str(path))
    cells = [cell.text for table in document.tables for row in table.rows for cell in row.cells]
    return "\n".join([p.text for p in document.paragraphs] + cells)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("samples")
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_samples.py"), str(out)],
        check=True,
        capture_output=True,
    )
    return out / "docs"


def files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_generator_writes_the_expected_files(generated: Path) -> None:
    assert files(generated) == EXPECTED
    assert sum((generated / f).stat().st_size for f in EXPECTED) < 1_000_000


def test_chinese_pdfs_extract_without_mojibake(generated: Path) -> None:
    for name, phrases in ZH_PHRASES.items():
        text = "\n".join(pdf_pages(generated / name))
        for phrase in phrases:
            assert phrase in text, f"{name}: {phrase!r} not extracted"


def test_pdfs_have_outline_header_footer_and_labels(generated: Path) -> None:
    reader = PdfReader(generated / "差旅费管理办法-2024.pdf")
    top = [item.title for item in reader.outline if not isinstance(item, list)]
    assert top[:3] == ["第一章 总则", "第二章 城市间交通费", "第三章 住宿费"]
    assert any(isinstance(item, list) for item in reader.outline)  # second level
    assert reader.page_labels == [str(n) for n in range(1, len(reader.pages) + 1)]
    for n, text in enumerate(pdf_pages(generated / "Employee-Leave-Policy.pdf"), 1):
        assert "Northwind Lab  |  Employee Leave Policy" in text
        assert f"Page {n}" in text


def test_docx_heading_styles_and_tables(generated: Path) -> None:
    benefits = docx.Document(str(generated / "员工福利手册.docx"))
    assert {"标题 1", "标题 2"} <= {getattr(p.style, "name", "") for p in benefits.paragraphs}
    assert benefits.tables
    it = docx.Document(str(generated / "IT-Security-Policy.docx"))
    assert {"Heading 1", "Heading 2", "Heading 3"} <= {
        getattr(p.style, "name", "") for p in it.paragraphs
    }


def test_series_sidecars(generated: Path) -> None:
    for year in ("2023", "2024"):
        meta = tomllib.loads((generated / f"差旅费管理办法-{year}.meta.toml").read_text("utf-8"))
        assert meta["series"] == "travel-expenses-zh"
        assert meta["version"] == year
        assert meta["effective_date"] == f"{year}-01-01"


def test_questions_gold_quotes_are_on_their_pages(generated: Path) -> None:
    questions = [
        json.loads(line) for line in (generated.parent / "qa.jsonl").read_text("utf-8").splitlines()
    ]
    assert len({q["id"] for q in questions}) == len(questions) == 20
    assert sum(q["lang"] == "zh" for q in questions) == 10
    assert sum(not q["answerable"] for q in questions) == 3
    assert sum(any(g["file"].startswith("hr-only/") for g in q["gold"]) for q in questions) == 2
    for q in questions:
        assert bool(q["gold"]) == q["answerable"], q["id"]
        for gold in q["gold"]:
            path = generated / gold["file"]
            if path.suffix == ".pdf":
                text = pdf_pages(path)[gold["page"] - 1]
            else:
                assert gold["page"] is None
                text = docx_text(path)
            assert squash(gold["quote"]) in squash(text), q["id"]


def test_committed_samples_match_the_generator(generated: Path) -> None:
    assert files(COMMITTED) == files(generated), "run scripts/make_samples.py"
    for name in sorted(EXPECTED):
        assert (COMMITTED / name).read_bytes() == (generated / name).read_bytes(), name
    qa = (COMMITTED.parent / "qa.jsonl").read_bytes()
    assert qa == (generated.parent / "qa.jsonl").read_bytes()
