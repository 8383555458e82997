"""A generated bilingual PDF + DOCX policy corpus for the ingest benchmarks, made once and kept.

    python -m bench.ingest.corpus_gen   # prints the folder (/tmp/kb-bench-corpus-v1/docs)
    generated_corpus() -> Path          # the same from a bench script

Deterministic (one seed per file): `FILES` policies, half English and half Chinese, each a
title, numbered sections and subsections of policy-like clauses with their own numbers, two
ruled tables (a rate table and an approval matrix), and one "document control" section whose
text is the same in every file of a language (boilerplate, as real policy sets repeat it). Every
other file is turned into a PDF by LibreOffice (`soffice --headless --convert-to pdf`, one call
for all of them); the rest stay .docx. The folder is reused while its `complete` marker exists:
delete /tmp/kb-bench-corpus-v1 to make it again.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(tempfile.gettempdir()) / "kb-bench-corpus-v1"
FILES = 24
SECTIONS = 9  # per file, each with 3 subsections of 4 paragraphs

TOPICS = [
    ("Annual leave", "年休假"),
    ("Travel expenses", "差旅费"),
    ("Remote work", "远程办公"),
    ("Information security", "信息安全"),
    ("Overtime pay", "加班工资"),
    ("Training budget", "培训预算"),
    ("Procurement", "采购管理"),
    ("Data retention", "数据保存"),
    ("Workplace safety", "安全生产"),
    ("Performance review", "绩效考核"),
    ("Recruitment", "招聘录用"),
    ("Business gifts", "商务礼品"),
]
EN = [
    "Employees in grade {a} accrue {b} days of {t} for each full year of service, "
    "credited on the first working day of the month after the anniversary.",
    "Requests above {b} hundred yuan need the written approval of a department head within "
    "{a} working days; incomplete requests are returned to the applicant.",
    "The {t} rules of office {a} apply from {b} January and replace every earlier version, "
    "including the interim notice issued by the regional office.",
    "A claim must be filed within {b} days of the event; late claims are reviewed by the "
    "{t} committee {a}, which may refuse them without further reasons.",
    "Where a contractor handles {t} matters, the contract must name a responsible person "
    "and allow an audit at {b} days' notice (clause {a}).",
    "Managers review the {t} records of their teams every {b} weeks and report exceptions "
    "to human resources under reference {a}.",
    "An employee who disagrees with a {t} decision may appeal within {b} days to the "
    "review panel, which answers in writing within {a} days.",
    "Records of {t} are kept for {b} years in the document system, folder {a}, and then "
    "destroyed unless a legal hold applies.",
]
ZH = [
    "第{a}条 员工每年享有{t}{b}天，须提前三个工作日通过系统提交申请，由部门负责人审批。",
    "超过{b}百元的{t}申请，须在{a}个工作日内报财务部审核，材料不全的退回申请人补正。",
    "本办法第{a}款自{b}月1日起施行，原{t}规定及区域办公室发布的临时通知同时废止。",
    "涉及{t}的外包合同应当明确责任人，并约定公司可在提前{b}日通知后进行审计（第{a}项）。",
    "部门负责人每{b}周检查一次本部门的{t}记录，发现异常的，按编号{a}报人力资源部。",
    "员工对{t}决定有异议的，可在{b}日内向复核小组申诉，复核小组应在{a}日内书面答复。",
    "{t}相关记录在文档系统第{a}号目录保存{b}年，期满后除依法需要保留的外予以销毁。",
    "违反{t}规定情节较轻的，给予书面警告；在{b}个月内再次违反的，按第{a}条处理。",
]
CONTROL = {
    True: "This policy is owned by the Policy Office. It is reviewed every year and whenever "
    "the law changes. Questions go to the owner named on the intranet page; printed copies "
    "are uncontrolled and may be out of date. The version on the intranet prevails.",
    False: "本制度由制度管理办公室负责解释，每年复核一次，法律法规变化时及时修订。"
    "有疑问的请联系内网页面列明的负责人；纸质文本为非受控版本，可能已过期，以内网版本为准。",
}


def _clauses(rng: random.Random, english: bool, topic: str, base: int, count: int) -> str:
    templates = EN if english else ZH
    joiner = " " if english else ""
    return joiner.join(
        rng.choice(templates).format(a=base + i, b=rng.randint(2, 99), t=topic)
        for i in range(count)
    )


def _table(document: object, rows: list[list[str]]) -> None:
    table = document.add_table(rows=len(rows), cols=len(rows[0]))  # type: ignore[attr-defined]
    table.style = "Table Grid"
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value


def write_policy(path: Path, index: int) -> None:
    """One policy file (.docx) of the corpus; the same index gives the same text."""
    import docx

    rng = random.Random(index)
    english = index % 2 == 0
    topic = TOPICS[index % len(TOPICS)]
    name = topic[0] if english else topic[1]
    document = docx.Document()
    document.add_heading(f"{name} policy {index}" if english else f"{name}管理办法（{index}）", 0)
    for s in range(SECTIONS):
        sub = TOPICS[(index + s) % len(TOPICS)]
        words = sub[0].lower() if english else sub[1]
        document.add_heading(f"{s + 1}. {sub[0]}" if english else f"第{s + 1}章 {sub[1]}", 1)
        for u in range(3):
            title = f"{s + 1}.{u + 1} Rules" if english else f"第{s + 1}.{u + 1}节 规定"
            document.add_heading(title, 2)
            for p in range(4):
                base = index * 1000 + s * 100 + u * 10 + p
                document.add_paragraph(_clauses(rng, english, words, base, rng.randint(3, 6)))
        if s == 2:
            head = (
                ["Grade", "City tier", "Limit (CNY)"] if english else ["职级", "城市", "标准（元）"]
            )
            rows = [[f"G{g}", f"{1 + g % 3}", str(rng.randint(2, 12) * 50)] for g in range(8)]
            _table(document, [head, *rows])
        if s == 5:
            head = ["Amount up to", "Approver"] if english else ["金额上限", "审批人"]
            roles = ["Team lead", "Department head", "Finance", "CFO"]
            if not english:
                roles = ["组长", "部门负责人", "财务部", "财务总监"]
            _table(document, [head, *[[f"{10 ** (k + 3)}", roles[k]] for k in range(4)]])
    document.add_heading("Document control" if english else "文件管理", 1)
    document.add_paragraph(CONTROL[english])
    document.save(str(path))


def generated_corpus(root: Path = ROOT) -> Path:
    """The corpus folder, made on first use (a minute or two: LibreOffice converts the PDFs)."""
    docs = root / "docs"
    if (root / "complete").is_file():
        return docs
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    if exe is None:
        raise SystemExit("the generated corpus needs LibreOffice (soffice) for its PDFs")
    shutil.rmtree(root, ignore_errors=True)
    docs.mkdir(parents=True)
    work = root / "to-pdf"
    work.mkdir()
    for index in range(FILES):
        target = work if index % 4 in (1, 2) else docs  # half PDF, both languages
        write_policy(target / f"policy-{index:03d}.docx", index)
    subprocess.run(
        [
            exe,
            f"-env:UserInstallation=file://{root / 'profile'}",
            "--headless",
            "--norestore",
            "--convert-to",
            "pdf",
            "--outdir",
            str(docs),
            *sorted(map(str, work.glob("*.docx"))),
        ],
        check=True,
        capture_output=True,
        timeout=900,
    )
    shutil.rmtree(work)
    shutil.rmtree(root / "profile", ignore_errors=True)
    (root / "complete").write_text("ok\n")
    return docs


if __name__ == "__main__":
    sys.stdout.write(f"{generated_corpus()}\n")
