"""Write the sample handbook of the fictional company Northwind Lab / 北风科技 into data/samples.

Usage:
    .venv/bin/python -m scripts.make_samples [OUT_DIR]      # default: data/samples

Output (deterministic: re-running gives byte-identical files):

    OUT_DIR/
      Employee-Leave-Policy.pdf          en  leave: annual, sick, carry-over, bereavement
      New-Hire-Onboarding-Guide.pdf      en  onboarding, probation
      IT-Security-Policy.docx            en  passwords, MFA, lost devices, incidents (Heading 1/2/3)
      Code-of-Conduct.docx               en  gifts, conflicts of interest, speaking up
      差旅费管理办法-2023.pdf             zh  travel and expenses, old version  } series
      差旅费管理办法-2024.pdf             zh  travel and expenses, current      } travel-expenses-zh
      差旅费管理办法-2023.meta.toml / 差旅费管理办法-2024.meta.toml   sidecars of the series
      考勤与加班管理办法.pdf              zh  working hours, overtime, marriage/maternity leave
      员工福利手册.docx                   zh  benefits (heading styles named 标题 1/标题 2)
      日常费用报销规定.docx               zh  non-travel expenses (built-in Heading styles)
      hr-only/薪酬等级表.docx             zh  salary bands            } meant for group "hr" only
      hr-only/Compensation-Review-Guidelines.pdf  en                  }
      qa.jsonl (beside docs/)            20 sample questions with gold {file, page, quote}

Each fact is stated once across the handbook, except in the travel series, where the 2024
version changes some amounts of the 2023 one. Chinese PDFs use reportlab's built-in CID font
STSong-Light (not embedded; pypdf extracts its text through the font's UniGB-UCS2-H mapping).
The gold page of each question is found here by searching pypdf's text, so the questions
stay correct when the layout moves.
"""

# ruff: noqa: E501  (the handbook prose below keeps one sentence per line)
from __future__ import annotations

import io
import json
import re
import sys
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import docx
from docx.enum.style import WD_STYLE_TYPE
from docx.oxml import OxmlElement
from docx.oxml.ns import qn
from docx.shared import Pt
from pypdf import PdfReader
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import mm
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.cidfonts import UnicodeCIDFont
from reportlab.platypus import (
    BaseDocTemplate,
    Frame,
    PageBreak,
    PageTemplate,
    Paragraph,
    Spacer,
    Table,
    TableStyle,
)

COMPANY = {"en": "Northwind Lab", "zh": "北风科技有限公司"}
FIXED_TIME = datetime(2024, 1, 1, 9, 0, 0)
ZIP_TIME = (2024, 1, 1, 9, 0, 0)
CJK_FONT = "STSong-Light"


@dataclass(frozen=True)
class Doc:
    """One handbook document: `body` is a tiny markup (see `parse_body`)."""

    path: str
    lang: str
    title: str
    code: str
    version: str
    effective: str
    body: str
    heading_style: str = "Heading"  # DOCX only: "Heading" (built-in) or "标题" (added styles)


# ---------------------------------------------------------------- markup


def parse_body(text: str) -> list[tuple[str, Any]]:
    """Blocks of the markup: '# ' '## ' '### ' headings, '- ' bullets, '|a|b|' table rows,
    other lines paragraphs.

    parse_body("# 1 Leave\\nText.") -> [("h1", "1 Leave"), ("p", "Text.")]
    """
    blocks: list[tuple[str, Any]] = []
    for raw in text.strip().splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := re.match(r"^(#{1,3}) (.+)$", line):
            blocks.append((f"h{len(m.group(1))}", m.group(2)))
        elif line.startswith("- "):
            blocks.append(("li", line[2:]))
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if blocks and blocks[-1][0] == "table":
                blocks[-1][1].append(cells)
            else:
                blocks.append(("table", [cells]))
        else:
            blocks.append(("p", line))
    return blocks


# ---------------------------------------------------------------- PDF


def _pdf_styles(lang: str) -> dict[str, ParagraphStyle]:
    zh = lang == "zh"
    font = CJK_FONT if zh else "Helvetica"
    bold = CJK_FONT if zh else "Helvetica-Bold"
    wrap = "CJK" if zh else None
    base = ParagraphStyle(
        "body", fontName=font, fontSize=10.5, leading=17, spaceAfter=6, wordWrap=wrap
    )
    return {
        "title": ParagraphStyle(
            "title", parent=base, fontName=bold, fontSize=20, leading=28, spaceAfter=6
        ),
        "meta": ParagraphStyle(
            "meta", parent=base, fontSize=9, textColor=colors.grey, spaceAfter=18
        ),
        "h1": ParagraphStyle(
            "h1", parent=base, fontName=bold, fontSize=15, leading=22, spaceBefore=6, spaceAfter=8
        ),
        "h2": ParagraphStyle(
            "h2", parent=base, fontName=bold, fontSize=12.5, leading=19, spaceBefore=8, spaceAfter=4
        ),
        "h3": ParagraphStyle(
            "h3", parent=base, fontName=bold, fontSize=11, leading=17, spaceBefore=4, spaceAfter=2
        ),
        "p": base,
        "li": ParagraphStyle("li", parent=base, leftIndent=14, bulletIndent=4),
        "cell": ParagraphStyle("cell", parent=base, fontSize=9.5, leading=14, spaceAfter=0),
    }


class _HandbookPdf(BaseDocTemplate):  # type: ignore[misc]
    """Adds an outline entry (bookmark) for every heading paragraph."""

    def afterFlowable(self, flowable: Any) -> None:
        level = getattr(flowable, "outline_level", None)
        if level is None:
            return
        key = f"h{self.seq.nextf('heading')}"
        self.canv.bookmarkPage(key)
        self.canv.addOutlineEntry(flowable.getPlainText(), key, level=level, closed=False)


def write_pdf(d: Doc, out: Path) -> None:
    styles = _pdf_styles(d.lang)
    zh = d.lang == "zh"
    font = CJK_FONT if zh else "Helvetica"

    def decorate(canvas: Any, doc: Any) -> None:
        canvas.saveState()
        canvas.setFont(font, 8.5)
        canvas.setFillColor(colors.grey)
        width, height = A4
        canvas.drawString(20 * mm, height - 14 * mm, f"{COMPANY[d.lang]}  |  {d.title}")
        canvas.drawRightString(width - 20 * mm, height - 14 * mm, d.code)
        canvas.line(20 * mm, height - 16 * mm, width - 20 * mm, height - 16 * mm)
        canvas.line(20 * mm, 16 * mm, width - 20 * mm, 16 * mm)
        label = "内部资料" if zh else "Internal"
        canvas.drawString(20 * mm, 11 * mm, f"{label}  |  {d.version}")
        page = f"第 {doc.page} 页" if zh else f"Page {doc.page}"
        canvas.drawRightString(width - 20 * mm, 11 * mm, page)
        if doc.page == 1:
            canvas.addPageLabel(0, style="D", start=1)
        canvas.restoreState()

    doc = _HandbookPdf(
        str(out),
        pagesize=A4,
        leftMargin=20 * mm,
        rightMargin=20 * mm,
        topMargin=24 * mm,
        bottomMargin=24 * mm,
        title=d.title,
        author=COMPANY[d.lang],
        subject=d.code,
        creator="kb-assistant scripts/make_samples.py",
        invariant=1,
        lang=d.lang,
    )
    frame = Frame(doc.leftMargin, doc.bottomMargin, doc.width, doc.height, id="body")
    doc.addPageTemplates([PageTemplate(id="page", frames=[frame], onPage=decorate)])

    meta = (
        f"文件编号：{d.code}　版本：{d.version}　生效日期：{d.effective}"
        if zh
        else f"Document {d.code} · Version {d.version} · Effective {d.effective}"
    )
    story: list[Any] = [Paragraph(d.title, styles["title"]), Paragraph(meta, styles["meta"])]
    first_h1 = True
    for kind, value in parse_body(d.body):
        if kind in ("h1", "h2", "h3"):
            if kind == "h1" and not first_h1:
                story.append(PageBreak())
            first_h1 = first_h1 and kind != "h1"
            para = Paragraph(value, styles[kind])
            para.outline_level = int(kind[1]) - 1
            story.append(para)
        elif kind == "li":
            story.append(Paragraph(value, styles["li"], bulletText="•"))
        elif kind == "table":
            rows = [[Paragraph(c, styles["cell"]) for c in row] for row in value]
            table = Table(rows, colWidths=[doc.width / len(value[0])] * len(value[0]))
            table.setStyle(
                TableStyle(
                    [
                        ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                        ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#e8eef4")),
                        ("VALIGN", (0, 0), (-1, -1), "TOP"),
                    ]
                )
            )
            story += [Spacer(1, 4), table, Spacer(1, 10)]
        else:
            story.append(Paragraph(value, styles["p"]))
    doc.build(story)


# ---------------------------------------------------------------- DOCX


def _add_page_field(paragraph: Any) -> None:
    field = OxmlElement("w:fldSimple")
    field.set(qn("w:instr"), "PAGE")
    run = OxmlElement("w:r")
    text = OxmlElement("w:t")
    text.text = "1"
    run.append(text)
    field.append(run)
    paragraph._p.append(field)


def write_docx(d: Doc, out: Path) -> None:
    document = docx.Document()
    zh = d.lang == "zh"
    normal = document.styles["Normal"]
    normal.font.size = Pt(10.5)
    if zh:
        normal.element.get_or_add_rPr().get_or_add_rFonts().set(qn("w:eastAsia"), "宋体")
    heading = {n: f"Heading {n}" for n in (1, 2, 3)}
    if d.heading_style == "标题":
        for n in (1, 2, 3):
            style = document.styles.add_style(f"标题 {n}", WD_STYLE_TYPE.PARAGRAPH)
            style.base_style = document.styles[f"Heading {n}"]
            style.next_paragraph_style = normal
            style.quick_style = True
            heading[n] = style.name

    props = document.core_properties
    props.title, props.author, props.subject = d.title, COMPANY[d.lang], d.code
    props.last_modified_by, props.revision = COMPANY[d.lang], 1
    props.created = props.modified = FIXED_TIME
    props.last_printed = FIXED_TIME
    props.keywords, props.comments = d.version, f"Effective {d.effective}"

    section = document.sections[0]
    section.header.paragraphs[0].text = f"{COMPANY[d.lang]}  |  {d.title}  |  {d.code}"
    footer = section.footer.paragraphs[0]
    footer.text = "内部资料  第 " if zh else "Internal  |  Page "
    _add_page_field(footer)
    if zh:
        footer.add_run(" 页")

    document.add_paragraph(d.title, style="Title")
    document.add_paragraph(
        f"文件编号：{d.code}　版本：{d.version}　生效日期：{d.effective}"
        if zh
        else f"Document {d.code} · Version {d.version} · Effective {d.effective}"
    )
    for kind, value in parse_body(d.body):
        if kind in ("h1", "h2", "h3"):
            document.add_paragraph(value, style=heading[int(kind[1])])
        elif kind == "li":
            document.add_paragraph(value, style="List Bullet")
        elif kind == "table":
            table = document.add_table(rows=len(value), cols=len(value[0]), style="Table Grid")
            for r, row in enumerate(value):
                for c, cell in enumerate(row):
                    table.cell(r, c).text = cell
                    if r == 0:
                        for run in table.cell(r, c).paragraphs[0].runs:
                            run.bold = True
        else:
            document.add_paragraph(value)
    buffer = io.BytesIO()
    document.save(buffer)
    out.write_bytes(_fixed_zip(buffer.getvalue()))


def _fixed_zip(data: bytes) -> bytes:
    """The same zip with fixed member timestamps (python-docx stamps the current time)."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(data)) as src,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst,
    ):
        for info in src.infolist():
            member = zipfile.ZipInfo(info.filename, date_time=ZIP_TIME)
            member.compress_type = zipfile.ZIP_DEFLATED
            member.external_attr = 0o644 << 16
            dst.writestr(member, src.read(info.filename))
    return out.getvalue()


# ---------------------------------------------------------------- content

LEAVE_EN = """
# 1 Purpose and Scope
## 1.1 Purpose
This policy explains how employees of Northwind Lab earn, request and use paid and unpaid leave. It applies together with local law; where local law grants more, local law prevails.
## 1.2 Who is covered
This policy covers all regular full-time and part-time employees. Interns and contractors are covered by their own agreements and are not entitled to the leave described here.
# 2 Annual Leave
## 2.1 Entitlement
Full-time employees receive 15 days of paid annual leave per calendar year.
After 5 full years of service, the annual leave entitlement increases to 20 days per calendar year.
Part-time employees receive annual leave in proportion to their contracted working hours.
## 2.2 Joining or leaving during the year
Employees who join during the year receive a pro-rata entitlement for the remaining full months, rounded down to the nearest half day.
Unused annual leave is not paid out, except when employment ends: accrued but untaken days of the current year are then paid at the base daily rate.
## 2.3 Requesting annual leave
Submit every leave request in the HR portal and wait for your manager's approval before booking travel.
Requests for 3 or more consecutive working days must be submitted at least 10 working days in advance.
## 2.4 Carry-over of unused leave
Employees may carry over at most 5 days of unused annual leave into the next year.
Carried-over days must be taken by 31 March of the following year; any carried-over days still unused on that date lapse without compensation.
Managers may not approve carry-over beyond 5 days, and HR does not grant exceptions for workload.
# 3 Sick Leave
## 3.1 Paid sick leave
Employees receive 10 days of paid sick leave per calendar year at full pay. Sick leave does not carry over into the next year.
Sick leave beyond 10 days is handled under the long-term illness provisions of the employment contract and local law.
## 3.2 Notifying your manager
If you are ill, notify your manager before 10:00 on the first day of absence, by phone or chat, and record the absence in the HR portal within 2 working days of your return.
## 3.3 Medical certificate
A medical certificate is required for any sick leave of more than 2 consecutive working days. Upload it to the HR portal when you record the absence.
# 4 Other Leave
## 4.1 Bereavement leave
Employees may take up to 5 days of paid bereavement leave on the death of an immediate family member (spouse, child, parent or sibling), and up to 2 days for other relatives.
## 4.2 Civic duty
Time spent on jury service or as a witness summoned by a court is paid at full salary. Provide the summons to HR.
## 4.3 Unpaid leave
Employees with at least 1 year of service may request up to 30 days of unpaid leave per calendar year. Unpaid leave requires the approval of both the manager and the department director.
# 5 Questions
## 5.1 Contact
Questions about this policy go to the HR Service Center at hr@northwind-lab.example.
## 5.2 Review
HR reviews this policy every year in November.
"""

ONBOARDING_EN = """
# 1 Before Your First Day
## 1.1 Documents to provide
Send the following documents to HR at least 3 working days before your start date: a copy of your ID card or passport, your bank card details for salary payment, and copies of your degree certificates.
## 1.2 Signing your contract
You sign your employment contract electronically in the HR portal. The link is sent to your private email address once your offer is accepted.
# 2 Your First Day
## 2.1 Arrival
On your first day, come to the reception on floor 12 of Building A at 9:30. Your manager or your onboarding buddy will meet you there.
## 2.2 Badge and laptop
Reception takes your photo for your access badge. The IT Service Desk hands you a configured laptop and helps you enroll in multi-factor authentication before you leave the desk.
## 2.3 Your onboarding buddy
Every new hire is paired with an onboarding buddy from a neighbouring team for the first 3 months. Your buddy answers day-to-day questions and introduces you to colleagues.
# 3 Your First Month
## 3.1 Mandatory training
New employees must complete the Information Security Awareness course and the Code of Conduct course in the learning portal within 14 days of their start date.
## 3.2 Goals
By the end of your first month, agree your probation goals with your manager and record them in the HR portal.
# 4 Probation
## 4.1 Length of probation
The probation period is 3 months for regular employees and 6 months for people managers.
## 4.2 Probation review
Your manager holds a probation review meeting with you during the last 2 weeks of the probation period. HR confirms the outcome in writing.
# 5 Getting Help
## 5.1 Contacts
For laptop, account or access problems, call the IT Service Desk on extension 8000. For contracts, pay and leave, write to hr@northwind-lab.example.
"""

IT_SECURITY_EN = """
# 1 Scope
This policy applies to everyone who uses Northwind Lab accounts, devices or data, including contractors.
# 2 Accounts and Passwords
## 2.1 Password requirements
### 2.1.1 Length and reuse
Passwords must be at least 14 characters long. Do not reuse any of your last 10 passwords, and never use your Northwind Lab password on another site.
### 2.1.2 Password changes
Passwords are not changed on a fixed schedule. Change your password immediately if you suspect it has been seen or stolen.
### 2.1.3 Password manager
Store passwords only in the company password manager, NorthKey. Writing passwords on paper or in plain-text files is not permitted.
|Account type|Minimum password length|MFA required|
|Standard user account|14 characters|Yes|
|Administrator account|20 characters|Yes, hardware key only|
|Service account|32 characters, generated|Not applicable|
## 2.2 Multi-factor authentication
### 2.2.1 Where MFA is required
MFA is mandatory for email, VPN, source-code hosting and the HR portal.
### 2.2.2 Approved methods
Approved second factors are hardware security keys and the NorthKey authenticator app. SMS codes are not accepted as a second factor.
## 2.3 Account lockout
An account is locked for 15 minutes after 5 failed sign-in attempts.
# 3 Devices
## 3.1 Company laptops
Company laptops use full-disk encryption. Screens must lock automatically after 5 minutes of inactivity.
## 3.2 Lost or stolen devices
Report a lost or stolen laptop or phone to the IT Service Desk within 1 hour of noticing the loss, by calling extension 8000.
IT will lock the device and erase it remotely. If the device was stolen, also file a police report within 48 hours and add the report number to the IT ticket.
## 3.3 Personal devices
Personal phones may access company email only through the managed mail app. Company data must not be stored on personal laptops.
# 4 Security Incidents
## 4.1 What counts as an incident
An incident is any event that may put company or customer data at risk: malware, a suspicious login, data sent to the wrong recipient, or a lost device.
## 4.2 How to report an incident
Report suspected security incidents within 30 minutes of discovery to security@northwind-lab.example or to the 24-hour security hotline +86 10 5555 0199.
## 4.3 Phishing
Use the Report Phishing button in the mail client for suspicious messages. Do not forward them to colleagues and do not click links or open attachments.
# 5 Data Classification
Company information is classified as Public, Internal, Confidential or Restricted.
Restricted data must never be copied to USB drives or personal cloud storage.
# 6 Enforcement
Violations of this policy may lead to disciplinary action. Questions go to the Security team.
"""

CONDUCT_EN = """
# 1 Our Principles
We act with integrity, treat each other with respect and follow the law in every country where we work.
# 2 Gifts and Hospitality
## 2.1 Accepting gifts
You may accept gifts with a total value of no more than RMB 300 from any one business partner in a calendar year. Gifts above this value must be politely declined or handed over to the Legal team.
## 2.2 Cash and vouchers
Never accept cash, shopping cards or vouchers, whatever the amount.
## 2.3 Gifts Register
Record every gift you accept or decline in the Gifts Register within 5 working days.
# 3 Conflicts of Interest
## 3.1 Declaring a conflict
Declare any potential conflict of interest to your manager and the Legal team within 10 working days of becoming aware of it.
## 3.2 Outside employment
Outside employment or paid board positions require written approval from your director and HR before you start.
# 4 Respect at Work
## 4.1 Harassment
Harassment, discrimination and bullying are not tolerated, whether in the office, at company events or online.
# 5 Speaking Up
## 5.1 Ethics hotline
Report concerns to your manager, to HR, or anonymously through the Ethics Hotline at ethics.northwind-lab.example.
## 5.2 Handling of reports
Every report is acknowledged within 3 working days. Northwind Lab does not tolerate retaliation against anyone who raises a concern in good faith.
# 6 Confidential Information and Social Media
## 6.1 Confidentiality
Keep company and customer information confidential during and after your employment.
## 6.2 Social media
Only the Communications team speaks for Northwind Lab in public. Do not post about unreleased products.
# 7 Violations
Breaches of this Code may lead to disciplinary action up to and including dismissal.
"""

TRAVEL_ZH = """
# 第一章 总则
## 一、目的与适用范围
为规范公司差旅管理、合理控制差旅费用，根据国家有关规定并结合公司实际，制定本办法。
本办法适用于北风科技有限公司全体正式员工及实习生因公出差发生的交通费、住宿费、伙食补助和市内交通费。
## 二、出差审批
员工出差须提前在 OA 系统提交出差申请，经部门负责人批准后方可出行。未经审批的出差费用不予报销。
# 第二章 城市间交通费
## 一、交通工具等级
员工乘坐火车可选择二等座，乘坐飞机可选择经济舱。
{flight_rule}
## 二、订票要求
机票和火车票应通过公司差旅平台预订，原则上选择起飞前后 2 小时内价格最低的航班。
# 第三章 住宿费
## 一、住宿标准
住宿费按出差目的地城市级别实行限额标准，具体如下表：
|城市级别|城市范围|住宿标准（元/人·晚）|
|一线城市|北京、上海、广州、深圳|{tier1}|
|新一线城市|杭州、成都、南京、武汉、西安、苏州|{tier2}|
|其他城市|除上述城市外的国内城市|{tier3}|
{lodging_sentence}
## 二、超标处理
住宿费超出标准的部分由员工个人承担。两名同性别员工同行出差的，原则上合住一间。
# 第四章 伙食补助与市内交通费
## 一、伙食补助
{meal_sentence}
出差当天往返的，伙食补助按半天计算。
{overseas_meal}
## 二、市内交通费
{local_transport}
# 第五章 报销
## 一、报销时限
{deadline}
逾期提交的，原则上不予报销；确因特殊原因延误的，须经财务总监书面批准。
## 二、报销凭证
报销时须提供合规发票、行程单或火车票及出差审批单，发票抬头为“北风科技有限公司”。
## 三、差旅借款
出差借款应在出差返回后 15 日内办理报销并结清借款。
# 第六章 附则
本办法由财务部负责解释。
{effective}
"""

TRAVEL_VERSIONS = {
    "2023": {
        "flight_rule": "总监及以上人员乘坐飞行时间超过 6 小时的国际航班，可选择商务舱。",
        "tier1": "700",
        "tier2": "500",
        "tier3": "350",
        "lodging_sentence": "一线城市住宿标准为每晚不超过 700 元。",
        "meal_sentence": "出差期间伙食补助标准为每人每天 100 元，按出差自然天数计算。",
        "overseas_meal": "",
        "local_transport": "出差期间市内交通费按每人每天 80 元包干使用，不再另行报销出租车费。",
        "deadline": "员工应在出差结束后 60 日内提交差旅费报销申请。",
        "effective": "本办法自 2023 年 1 月 1 日起施行。",
    },
    "2024": {
        "flight_rule": "总监及以上人员乘坐飞行时间超过 8 小时的国际航班，可选择商务舱。",
        "tier1": "800",
        "tier2": "550",
        "tier3": "350",
        "lodging_sentence": "一线城市住宿标准为每晚不超过 800 元。",
        "meal_sentence": "出差期间伙食补助标准为每人每天 120 元，按出差自然天数计算。",
        "overseas_meal": "境外出差伙食补助标准为每人每天 50 美元。",
        "local_transport": "出差期间市内交通费按每人每天 100 元包干使用，不再另行报销出租车费。",
        "deadline": "员工应在出差结束后 30 日内提交差旅费报销申请。",
        "effective": "本办法自 2024 年 1 月 1 日起施行，《差旅费管理办法（2023 年版）》同时废止。",
    },
}

ATTENDANCE_ZH = """
# 第一章 总则
为规范公司考勤与加班管理，保障员工休息休假权利，制定本办法。本办法适用于北风科技有限公司全体员工。
# 第二章 工作时间
## 一、标准工时
公司实行每周五天工作制，标准工作时间为周一至周五 9:00 至 18:00，其中 12:00 至 13:00 为午休时间。
## 二、弹性工作
经部门负责人同意，员工可实行弹性工作，但每天 10:00 至 16:00 为核心工作时间，员工须在岗。
# 第三章 考勤管理
## 一、打卡
员工上下班须通过公司考勤应用打卡。
## 二、补卡
因故漏打卡的，应在 3 个工作日内在 OA 系统提交补卡申请，每月补卡不超过 3 次。
# 第四章 加班管理
## 一、加班审批
加班须事先在 OA 系统提交申请并经部门负责人批准，未经批准的加班不计入加班时长。
## 二、调休
工作日及休息日加班优先安排调休，调休应在加班发生后 6 个月内使用，逾期作废。
## 三、法定节假日加班
法定节假日安排加班的，公司按员工日工资的 300% 支付加班工资，不安排调休。
# 第五章 婚假与生育相关假期
## 一、婚假
员工依法登记结婚的，可享受婚假 10 天，须在结婚登记之日起 1 年内一次性休完。
## 二、产假
女员工生育享受产假 158 天；难产的，增加产假 15 天。
## 三、陪产假
男员工在配偶生育期间享受陪产假 15 天。
## 四、产前检查
怀孕女员工在劳动时间内进行产前检查，所需时间计入劳动时间。
# 第六章 附则
本办法由人力资源部负责解释，自 2024 年 3 月 1 日起施行。
"""

BENEFITS_ZH = """
# 一、总则
本手册介绍北风科技有限公司为员工提供的各项福利。福利标准每年由人力资源部复核一次。
# 二、保险与医疗
## （一）社会保险与住房公积金
公司依法为员工缴纳五项社会保险，并按员工月基本工资的 12% 缴存住房公积金。
## （二）补充医疗保险
公司为全体正式员工购买补充医疗保险，门诊及住院自付费用的报销比例为 90%，每人每年报销上限为 20000 元。
员工的配偶及子女可按团体价格自费参保。
## （三）年度体检
公司每年为正式员工安排一次免费体检，体检标准为每人 1500 元。
# 三、补贴
各项补贴标准如下表：
|补贴项目|标准|发放方式|
|餐费补贴|每个工作日 30 元|随工资发放|
|通讯补贴|每月 200 元|随工资发放|
|健身补贴|每月 100 元|凭票报销|
补贴随当月工资发放，试用期员工同样享受。
# 四、节日与关怀
## （一）生日礼金
员工生日当月可领取生日礼金 300 元。
## （二）婚育贺礼
员工结婚或生育子女的，公司分别发放贺礼 1000 元。
## （三）节日福利
春节、中秋节前，公司向每位员工发放节日礼品。
# 五、学习与发展
## （一）培训预算
每位员工每年享有 5000 元的外部培训预算，须经部门负责人批准后使用。
## （二）学历教育
员工在职攻读与岗位相关的学位，经批准后公司报销学费的 50%，报销后须继续服务满 2 年。
"""

EXPENSES_ZH = """
# 1 总则
## 1.1 目的
为规范日常费用报销，制定本规定。差旅费的报销按《差旅费管理办法》执行，不适用本规定。
## 1.2 适用范围
本规定适用于北风科技有限公司全体员工发生的业务招待费、办公用品费、会议费等日常费用。
# 2 业务招待费
## 2.1 事前审批
业务招待须事先在 OA 系统提交招待申请，写明招待对象、人数和预算。
## 2.2 招待标准
业务招待费人均标准不超过 300 元，酒水费用包含在内。
# 3 票据要求
## 3.1 发票
报销须提供增值税发票，发票抬头为“北风科技有限公司”，纳税人识别号为 91110000NW0000001X。
## 3.2 付款凭证
单张发票金额超过 1000 元的，须同时提供银行转账或电子支付凭证。
# 4 审批权限
## 4.1 审批层级
日常费用按金额分级审批，具体如下表：
|单笔报销金额|审批人|
|5000 元及以下|部门负责人|
|5000 元以上至 20000 元|分管副总裁|
|20000 元以上|首席执行官|
# 5 报销时限与付款
## 5.1 报销时限
日常费用应在费用发生后 90 日内提交报销申请。
## 5.2 付款
财务部在报销审批完成后 5 个工作日内将款项支付至员工工资卡。
"""

SALARY_ZH = """
# 一、适用范围
本表仅供人力资源部内部使用，不得向其他部门或员工本人以外的人员披露。
# 二、职级与月基本工资区间
|职级|岗位示例|月基本工资区间（元）|
|P1|助理工程师|8000—12000|
|P2|工程师|11000—16000|
|P3|高级工程师|15000—22000|
|P4|资深工程师|20000—30000|
|P5|技术专家|28000—42000|
|P6|高级技术专家|38000—55000|
# 三、定薪规则
## （一）新员工定薪
新员工定薪不得超过所在职级工资区间的中位值；超出中位值的，须经人力资源总监审批。
## （二）年终奖
年终奖基准为 2 个月基本工资，根据公司业绩与个人绩效系数在 0 至 2 倍之间浮动。
"""

COMPENSATION_EN = """
# 1 Purpose
These guidelines are for HR business partners and the compensation team only. They describe how the annual compensation review is run.
# 2 Review Cycle
## 2.1 Timing
The annual compensation review takes place in April. Salary changes take effect on 1 May.
## 2.2 Eligibility
Employees who joined on or before 31 December of the previous year are eligible for the review.
# 3 Budgets
## 3.1 Merit increase budget
The merit increase budget for the 2024 review is 4% of the base payroll of each department.
## 3.2 Promotion increases
A promotion to the next grade comes with a salary increase of 10% to 15%, paid from a separate promotion budget.
# 4 Calibration
## 4.1 Calibration meetings
Ratings are calibrated in department meetings chaired by the HR business partner before any increase is communicated.
# 5 Confidentiality
## 5.1 Handling salary data
Salary data must not be shared outside the HR group. Export files must be encrypted and deleted within 30 days.
"""

DOCS = [
    Doc(
        "Employee-Leave-Policy.pdf",
        "en",
        "Employee Leave Policy",
        "NW-HR-001",
        "3.0",
        "2024-01-01",
        LEAVE_EN,
    ),
    Doc(
        "New-Hire-Onboarding-Guide.pdf",
        "en",
        "New Hire Onboarding Guide",
        "NW-HR-004",
        "2.1",
        "2024-02-01",
        ONBOARDING_EN,
    ),
    Doc(
        "IT-Security-Policy.docx",
        "en",
        "IT Security Policy",
        "NW-IT-002",
        "4.0",
        "2024-01-15",
        IT_SECURITY_EN,
    ),
    Doc(
        "Code-of-Conduct.docx",
        "en",
        "Code of Conduct",
        "NW-LEG-003",
        "2.0",
        "2023-07-01",
        CONDUCT_EN,
    ),
    *[
        Doc(
            f"差旅费管理办法-{year}.pdf",
            "zh",
            f"差旅费管理办法（{year} 年版）",
            f"NW-FIN-005-{year}",
            year,
            f"{year}-01-01",
            TRAVEL_ZH.format(**values),
        )
        for year, values in TRAVEL_VERSIONS.items()
    ],
    Doc(
        "考勤与加班管理办法.pdf",
        "zh",
        "考勤与加班管理办法",
        "NW-HR-009",
        "1.2",
        "2024-03-01",
        ATTENDANCE_ZH,
    ),
    Doc(
        "员工福利手册.docx",
        "zh",
        "员工福利手册",
        "NW-HR-007",
        "2024",
        "2024-01-01",
        BENEFITS_ZH,
        heading_style="标题",
    ),
    Doc(
        "日常费用报销规定.docx",
        "zh",
        "日常费用报销规定",
        "NW-FIN-008",
        "1.0",
        "2023-09-01",
        EXPENSES_ZH,
    ),
    Doc(
        "hr-only/薪酬等级表.docx", "zh", "薪酬等级表", "NW-HR-C01", "2024", "2024-01-01", SALARY_ZH
    ),
    Doc(
        "hr-only/Compensation-Review-Guidelines.pdf",
        "en",
        "Compensation Review Guidelines",
        "NW-HR-C02",
        "2024",
        "2024-03-01",
        COMPENSATION_EN,
    ),
]

SERIES = "travel-expenses-zh"

# (id, lang, question, answer, gold [(file, quote)]); the page of each quote is looked up.
QUESTIONS: list[tuple[str, str, str, str, list[tuple[str, str]]]] = [
    (
        "smp-en01",
        "en",
        "How many days of unused annual leave can I carry over into next year?",
        "At most 5 days; carried-over days must be taken by 31 March of the following year.",
        [
            (
                "Employee-Leave-Policy.pdf",
                "Employees may carry over at most 5 days of unused annual leave into the next year.",
            )
        ],
    ),
    (
        "smp-en02",
        "en",
        "I have worked at Northwind Lab for 6 years. How much annual leave do I get?",
        "After 5 full years of service the entitlement is 20 days per calendar year.",
        [
            (
                "Employee-Leave-Policy.pdf",
                "After 5 full years of service, the annual leave entitlement increases to 20 days",
            )
        ],
    ),
    (
        "smp-en03",
        "en",
        "When do I need a doctor's note for sick leave?",
        "A medical certificate is required for sick leave of more than 2 consecutive working days.",
        [
            (
                "Employee-Leave-Policy.pdf",
                "A medical certificate is required for any sick leave of "
                "more than 2 consecutive working days.",
            )
        ],
    ),
    (
        "smp-en04",
        "en",
        "I left my work laptop on the train. What should I do and how fast?",
        "Report it to the IT Service Desk within 1 hour by calling extension 8000; IT locks and "
        "wipes it remotely.",
        [
            (
                "IT-Security-Policy.docx",
                "Report a lost or stolen laptop or phone to the IT Service "
                "Desk within 1 hour of noticing the loss, by calling extension 8000.",
            )
        ],
    ),
    (
        "smp-en05",
        "en",
        "Can I use text-message codes as my second factor?",
        "No. Only hardware security keys and the NorthKey authenticator app are approved; SMS codes "
        "are not accepted.",
        [("IT-Security-Policy.docx", "SMS codes are not accepted as a second factor.")],
    ),
    (
        "smp-en06",
        "en",
        "What is the maximum value of gifts I can accept from a supplier?",
        "No more than RMB 300 in total from any one business partner per calendar year.",
        [
            (
                "Code-of-Conduct.docx",
                "You may accept gifts with a total value of no more than RMB 300 "
                "from any one business partner in a calendar year.",
            )
        ],
    ),
    (
        "smp-en07",
        "en",
        "How long is probation for a new people manager?",
        "6 months (3 months for regular employees).",
        [
            (
                "New-Hire-Onboarding-Guide.pdf",
                "The probation period is 3 months for regular employees "
                "and 6 months for people managers.",
            )
        ],
    ),
    (
        "smp-en08",
        "en",
        "What is the hotel limit per night when I travel to Shanghai?",
        "Under the current (2024) travel policy, first-tier cities including Shanghai are capped at "
        "800 yuan per night.",
        [("差旅费管理办法-2024.pdf", "一线城市住宿标准为每晚不超过 800 元。")],
    ),
    (
        "smp-en09",
        "en",
        "What is the merit increase budget in this year's compensation review?",
        "4% of each department's base payroll for the 2024 review.",
        [
            (
                "hr-only/Compensation-Review-Guidelines.pdf",
                "The merit increase budget for the 2024 review is 4% of the base payroll",
            )
        ],
    ),
    (
        "smp-enu01",
        "en",
        "Am I allowed to bring my dog to the office?",
        "The handbook does not say.",
        [],
    ),
    (
        "smp-zh01",
        "zh",
        "去北京出差，住宿费每晚最多能报多少？",
        "按 2024 年版差旅费管理办法，一线城市住宿标准为每晚不超过 800 元。",
        [("差旅费管理办法-2024.pdf", "一线城市住宿标准为每晚不超过 800 元。")],
    ),
    (
        "smp-zh02",
        "zh",
        "2023 年版差旅费管理办法规定的伙食补助是每天多少钱？",
        "2023 年版为每人每天 100 元（2024 年版已调整为 120 元）。",
        [("差旅费管理办法-2023.pdf", "出差期间伙食补助标准为每人每天 100 元")],
    ),
    (
        "smp-zh03",
        "zh",
        "出差回来以后多长时间内必须提交报销？",
        "现行 2024 年版规定，应在出差结束后 30 日内提交差旅费报销申请。",
        [("差旅费管理办法-2024.pdf", "员工应在出差结束后 30 日内提交差旅费报销申请。")],
    ),
    (
        "smp-zh04",
        "zh",
        "周末加班换来的调休有使用期限吗？",
        "有，调休应在加班发生后 6 个月内使用，逾期作废。",
        [("考勤与加班管理办法.pdf", "调休应在加班发生后 6 个月内使用，逾期作废。")],
    ),
    (
        "smp-zh05",
        "zh",
        "婚假有几天？什么时候之前要休完？",
        "婚假 10 天，须在结婚登记之日起 1 年内一次性休完。",
        [("考勤与加班管理办法.pdf", "可享受婚假 10 天，须在结婚登记之日起 1 年内一次性休完。")],
    ),
    (
        "smp-zh06",
        "zh",
        "公司年度体检的标准是多少钱？",
        "每年一次免费体检，标准为每人 1500 元。",
        [("员工福利手册.docx", "公司每年为正式员工安排一次免费体检，体检标准为每人 1500 元。")],
    ),
    (
        "smp-zh07",
        "zh",
        "请客户吃饭，人均可以花多少钱？",
        "业务招待费人均不超过 300 元（含酒水），且须事先在 OA 系统申请。",
        [("日常费用报销规定.docx", "业务招待费人均标准不超过 300 元，酒水费用包含在内。")],
    ),
    (
        "smp-zh08",
        "zh",
        "年终奖的基准是几个月工资？",
        "年终奖基准为 2 个月基本工资，按公司业绩与个人绩效系数在 0 至 2 倍之间浮动。",
        [("hr-only/薪酬等级表.docx", "年终奖基准为 2 个月基本工资")],
    ),
    ("smp-zhu01", "zh", "公司给新员工提供宿舍吗？", "手册中没有相关规定。", []),
    ("smp-zhu02", "zh", "员工股票期权的行权价格是多少？", "手册中没有相关规定。", []),
]


# ---------------------------------------------------------------- extraction (as the test does)


def squash(text: str) -> str:
    """Text with all whitespace removed: squash("放假 4 天") -> "放假4天"."""
    return re.sub(r"\s+", "", text)


def pdf_pages(path: Path) -> list[str]:
    return [page.extract_text() or "" for page in PdfReader(path).pages]


def docx_text(path: Path) -> str:
    """Paragraphs and table cells in body order, one per line."""
    document = docx.Document(str(path))
    lines: list[str] = []
    for child in document.element.body.iterchildren():
        if child.tag == qn("w:p"):
            lines.append("".join(t.text or "" for t in child.iter(qn("w:t"))))
        elif child.tag == qn("w:tbl"):
            for row in child.iter(qn("w:tr")):
                cells = [
                    "".join(t.text or "" for t in tc.iter(qn("w:t"))) for tc in row.iter(qn("w:tc"))
                ]
                lines.append("\t".join(cells))
    return "\n".join(lines)


def locate(out_dir: Path, file: str, quote: str) -> int | None:
    """1-based page of `quote` in a PDF (None for DOCX); raises if not found exactly once."""
    path = out_dir / file
    if path.suffix == ".docx":
        if squash(quote) not in squash(docx_text(path)):
            raise ValueError(f"{file}: quote not found: {quote!r}")
        return None
    pages = [n for n, text in enumerate(pdf_pages(path), 1) if squash(quote) in squash(text)]
    if len(pages) != 1:
        raise ValueError(f"{file}: quote found on pages {pages}, want one: {quote!r}")
    return pages[0]


# ---------------------------------------------------------------- main


def write_meta(out_dir: Path) -> None:
    for year in TRAVEL_VERSIONS:
        stem = f"差旅费管理办法-{year}"
        (out_dir / f"{stem}.meta.toml").write_text(
            f"# Sidecar of {stem}.pdf: its place in a versioned series of documents.\n"
            f'series = "{SERIES}"\n'
            f'version = "{year}"\n'
            f'effective_date = "{year}-01-01"\n'
            f'title = "差旅费管理办法（{year} 年版）"\n',
            encoding="utf-8",
        )


def write_questions(docs_dir: Path, qa_path: Path) -> None:
    lines = []
    for qid, lang, question, answer, gold in QUESTIONS:
        record = {
            "id": qid,
            "lang": lang,
            "question": question,
            "answer": answer,
            "answerable": bool(gold),
            "gold": [{"file": f, "page": locate(docs_dir, f, q), "quote": q} for f, q in gold],
        }
        lines.append(json.dumps(record, ensure_ascii=False))
    qa_path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def make_samples(out_dir: Path) -> list[Path]:
    """Write the documents under out_dir/docs and the questions to out_dir/qa.jsonl (the
    layout `kb eval` reads); return every path written."""
    pdfmetrics.registerFont(UnicodeCIDFont(CJK_FONT))
    docs_dir = out_dir / "docs"
    (docs_dir / "hr-only").mkdir(parents=True, exist_ok=True)
    for d in DOCS:
        target = docs_dir / d.path
        (write_pdf if target.suffix == ".pdf" else write_docx)(d, target)
    write_meta(docs_dir)
    write_questions(docs_dir, out_dir / "qa.jsonl")
    return sorted(p for p in out_dir.rglob("*") if p.is_file())


def main() -> None:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("data/samples")
    for path in make_samples(out_dir):
        print(f"{path.stat().st_size:>8}  {path}")


if __name__ == "__main__":
    main()
