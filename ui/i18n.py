"""Chinese and English labels of the web app.

The language follows the browser's Accept-Language header at page load and can be switched on
the page; server-made text (source cards, notices, timings) uses the same table.

    t("send", "zh") -> "发送"
    lang_from_header("zh-CN,zh;q=0.9,en;q=0.8") -> "zh"
    lab = Labels(); button = lab(gr.Button(t("send")), value="send"); lab.updates("zh")

`Labels` keeps the page's components whose words follow its language (the page's and the admin
tab's builders label theirs), so the language picker relabels them all.
"""

from __future__ import annotations

from typing import Any, TypeVar

C = TypeVar("C")

LANGS = ("en", "zh")

LABELS: dict[str, tuple[str, str]] = {
    # key: (English, Chinese)
    "title": ("Policy assistant", "制度问答助手"),
    # --- the sign-in page's link to the company's OpenID provider (ui/identity/oidc_web.py)
    "oidc_sign_in": ("Sign in with your company account · 使用公司账号登录",
                     "使用公司账号登录 · Sign in with your company account"),
    "chat_tab": ("Ask", "提问"),
    "admin_tab": ("Admin", "管理"),
    "question": ("Your question", "您的问题"),
    "placeholder": ("e.g. How many days of annual leave can I carry over?",
                    "例如：年假可以结转几天？"),
    "send": ("Send", "发送"),
    "new_chat": ("New conversation", "新对话"),
    "language": ("Language", "语言"),
    "signed_in": ("Signed in as {user} · groups: {groups}", "当前用户 {user} · 用户组：{groups}"),
    "logout": ("Log out", "退出登录"),
    "sources": ("Sources", "来源"),
    "synced_folders": ("Folders kept in sync", "同步文件夹"),
    "view_source": ("View source", "查看原文"),
    "pick_source": ("Citation", "引用"),
    "source_view": ("Source", "原文"),
    "page_n": ("page {n}", "第 {n} 页"),
    "printed": ("printed {label}", "页码 {label}"),
    "section": ("section", "章节"),
    "superseded": ("superseded by a newer version", "已被新版本取代"),
    "review_due": ("past its review date ({day}): check with the document's owner",
                   "已过复审日期（{day}）：请向文档负责人确认"),
    "ocr": ("read by OCR from a scan: check the page image", "扫描件经OCR识别：请对照页面图像"),
    "unsupported": ("not clearly supported by this passage", "该段落未明确支持此说法"),
    "details": ("Details", "详情"),
    "timings": ("retrieve {retrieve} ms · pack {pack} ms · first token {first_token} ms · "
                "total {total} ms",
                "检索 {retrieve} 毫秒 · 组装 {pack} 毫秒 · 首字 {first_token} 毫秒 · "
                "总计 {total} 毫秒"),
    "retrieval_only": ("Retrieval only: the language model is unavailable",
                       "仅检索：语言模型暂不可用"),
    "fallback": ("Passages instead of the model's answer, which could not be checked",
                 "以原文代替无法核对的模型回答"),
    "model_answer": ("Show the model's answer", "查看模型的回答"),
    "unverified": ("Some statements could not be matched to a source; check the citations.",
                   "部分内容未能与来源对应，请核对引用。"),
    "feedback": ("Feedback on the last answer", "对上一个回答的反馈"),
    "comment": ("Comment (optional)", "意见（可选）"),
    # words, not emoji: the fonts of a plain Linux browser may lack them
    "thumbs_up": ("Helpful", "有帮助"),
    "thumbs_down": ("Not helpful", "没帮助"),
    "feedback_saved": ("Thank you: feedback saved.", "谢谢，反馈已保存。"),
    "no_answer_yet": ("Ask a question first.", "请先提问。"),
    "thinking": ("Searching the documents…", "正在检索文档…"),
    "empty_question": ("Type a question first.", "请先输入问题。"),
    "upload": ("Upload PDF or DOCX files", "上传 PDF 或 DOCX 文件"),
    # --- policy dates (ui/admin/policy_dates.py): the upload's dates, the due list
    "date_effective": ("In force from (YYYY-MM-DD, optional)", "生效日期（YYYY-MM-DD，可选）"),
    "date_review_by": ("Review by (YYYY-MM-DD, optional)", "复审日期（YYYY-MM-DD，可选）"),
    "date_expires": ("In force through (YYYY-MM-DD, optional)",
                     "有效期至（含当日，YYYY-MM-DD，可选）"),
    "due_list": ("Due for review or expiring within 30 days", "30 天内需复审或将失效的文档"),
    "groups": ("Access groups", "访问组"),
    "ingest": ("Ingest", "导入"),
    "report": ("Report", "导入结果"),
    "documents": ("Documents", "文档"),
    "refresh": ("Refresh", "刷新"),
    "delete_doc": ("Document to delete (id or path)", "要删除的文档（ID 或路径）"),
    "delete": ("Delete", "删除"),
    "reindex_mode": ("Re-index", "重建索引"),
    "incremental": ("incremental", "增量"),
    "full": ("full", "全量"),
    "reindex": ("Run re-index", "开始重建索引"),
    "stats": ("Store", "存储状态"),
    "feedback_list": ("Feedback", "用户反馈"),
    "insights": ("Questions and knowledge gaps", "提问与知识缺口"),
    "figures": ("Figures", "统计"),
    "per_day": ("Questions per day", "每日提问数"),
    "latency": ("Time per stage (ms)", "各阶段耗时（毫秒）"),
    "most_cited": ("Documents cited most", "被引用最多的文件"),
    "never_cited": ("Documents never cited", "从未被引用的文件"),
    "gaps": ("Knowledge gaps: abstained or thumbs-down, most frequent first",
             "知识缺口：未能回答或被点踩的问题，按次数排序"),
    "gap": ("Knowledge gap", "知识缺口"),
    "gap_note": ("Which document should answer this?", "应由哪份文件回答？"),
    "save": ("Save", "保存"),
    "export_csv": ("Export gaps (CSV)", "导出缺口（CSV）"),
    "audit": ("Audit trail", "审计记录"),
    "audit_event": ("Event (or its start, e.g. user.)", "事件（或其前缀，如 user.）"),
    "audit_actor": ("Actor", "操作者"),
    "audit_since": ("Since (date, UTC)", "起始日期（UTC）"),
    "audit_csv": ("Export audit trail (CSV)", "导出审计记录（CSV）"),
    "admin_only": ("Administrators only.", "仅限管理员。"),
    "not_signed_in": ("Please sign in.", "请先登录。"),
    "denied": ("That source is outside your groups.", "该来源不在您的访问范围内。"),
    "model_down": ("The language model did not answer; an administrator can see why in the "
                   "server log.", "语言模型未响应；管理员可在服务器日志中查看原因。"),
    "busy": ("Too many questions at once: please try again in a few seconds.",
             "当前提问人数过多，请几秒后再试。"),
    "page_image": ("The cited page", "引用所在页面"),
    "groups_outside": ("You may only give documents your own groups: {groups}",
                       "只能为文档指定您自己的访问组：{groups}"),
    "no_pdftoppm": ("(page image unavailable: install poppler-utils; showing the page text)",
                    "（无法渲染页面图像：请安装 poppler-utils；显示页面文本）"),
    # conversations
    "conversations": ("Your conversations", "我的对话"),
    "conversation_title": ("Title of this conversation", "当前对话的标题"),
    "rename": ("Rename", "重命名"),
    "delete_conversation": ("Delete this conversation", "删除当前对话"),
    "delete_sure": ("Delete this conversation for good?", "确定永久删除当前对话吗？"),
    "delete_yes": ("Delete", "删除"),
    "delete_no": ("Keep it", "保留"),
    "open_one_first": ("Open or start a conversation first.", "请先打开或开始一个对话。"),
    "renamed": ("Renamed.", "已重命名。"),
    "conversation_deleted": ("Conversation deleted.", "对话已删除。"),
    "answer_withheld": ("(This answer is withheld: it cited a passage now outside your groups "
                        "or no longer stored.)",
                        "（此回答已隐去：它引用的内容已不在您的访问范围内，或已不存在。）"),
    "no_such_conversation": ("That conversation is not one of yours (or was deleted).",
                             "该对话不属于您（或已被删除）。"),
    # --- the section view of a Word citation (ui/web/server.py: /section/{chunk_id}) ---
    "section_view": ("The document at the cited section", "文档中引用所在的章节"),
    "open_tab": ("Open in a new tab", "在新标签页中打开"),
    "cited_here": ("cited passage", "被引用的段落"),
    "open_section": ("open at this section", "在文档中打开此章节"),
    # --- which mode answered: a generated answer says so too (retrieval_only, fallback above)
    "generated": ("Written by the language model from the sources below",
                  "由语言模型根据以下来源撰写"),
    # --- an answer an admin approved (assistant/approved/): who approved it and when
    "approved_by": ("Approved by {name} on {day}", "已审核：{name}，{day}"),
    "approved_answer": ("An approved answer", "已审核的答案"),
    # --- the admin tab's editor of approved answers (ui/admin/approved.py)
    "approved_answers": ("Approved answers", "审核答案"),
    "approved_start": ("Start from (gap, thumbs-down, asked question)",
                       "起点（知识缺口、差评、已问问题）"),
    "approved_edit": ("Edit an approved answer", "编辑审核答案"),
    "approved_find": ("Find passages", "查找段落"),
    "approved_cite": ("Passages to cite ([1], [2], … in this order)",
                      "引用的段落（按顺序为 [1]、[2]…）"),
    "approved_text": ("Answer (cite as [1], [2], …)", "答案（以 [1]、[2]… 标注引用）"),
    "approved_also": ("Also asked as (one per line, e.g. in the other language)",
                      "其他问法（每行一个，例如另一种语言）"),
    "approved_save": ("Save and approve", "保存并审核"),
    # --- the empty chat (ui/page/welcome.py)
    "library_holds": ("The library holds {n} documents you may ask about:",
                      "资料库中有 {n} 份您可以提问的文件："),
    "library_try": ("Ask in English or Chinese, or try a question below.",
                    "可用中文或英文提问，也可以试试下面的问题。"),
    "library_empty": ("The library holds no documents you may see yet: ask an admin to add "
                      "some.", "资料库中还没有您可以查看的文件：请联系管理员添加。"),
    # --- a follow-up read with its history (assistant/followup.py): what retrieval searched for
    "searched_for": ("Searched for: {text}", "检索内容：{text}"),
}


def t(key: str, lang: str = "en", **values: object) -> str:
    """The label `key` in `lang` (English when unknown), formatted with `values`."""
    en, zh = LABELS.get(key, (key, key))
    text = zh if lang == "zh" else en
    return text.format(**values) if values else text


def lang_from_header(accept_language: str | None) -> str:
    """The first of our languages the browser prefers; English otherwise."""
    best, best_q = "en", -1.0
    for i, part in enumerate((accept_language or "").split(",")):
        tag, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        code = tag.strip().lower()[:2]
        if code in LANGS and q - i * 1e-6 > best_q:
            best, best_q = code, q - i * 1e-6
    return best


class Labels:
    """The components whose words follow the page's language, each with the i18n keys of its
    attributes: `lab(gr.Button(t("send")), value="send")` relabels the button's value."""

    def __init__(self) -> None:
        self.keyed: list[tuple[Any, dict[str, str]]] = []

    def __call__(self, component: C, **keys: str) -> C:
        self.keyed.append((component, keys))
        return component

    @property
    def components(self) -> list[Any]:
        return [component for component, _ in self.keyed]

    def updates(self, lang: str) -> list[dict[str, Any]]:
        """Each component's words in `lang`, in the order of `components`."""
        return [{"__type__": "update", **{attr: t(key, lang) for attr, key in keys.items()}}
                for _component, keys in self.keyed]
