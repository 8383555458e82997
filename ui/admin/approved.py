"""The admin tab's editor of approved answers: start from a knowledge gap, a
thumbs-down, a logged question or a blank page; "Find passages" retrieves for the question with
the admin's groups and offers the passages to cite; write the answer, its groups and the other
ways it is asked; save (an edit re-approves) or remove. Beside it, the table of approved answers,
suspended ones first with the reason. Admins only, each seeing the answers that share one of
their groups and cite only documents they may see (see-all: every one); each change is in the
audit trail.

    build_approved_view(lab, t) -> ApprovedView    # in the admin tab (ui/page/app.py)
    wire_approved_view(app, view)                  # its events, to `ApprovedHandlers`
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from assistant.answer_json import approved_day
from assistant.approved.answers import Draft, Ref
from core.errors import KbError
from core.types import ApprovedAnswer, User
from ui.admin import insights
from ui.handlers import Handlers, UserError
from ui.i18n import t

APPROVED_HEADERS = ["id", "status", "reason", "question", "also asked", "groups", "approved by",
                    "on", "cites"]
STARTS = 30  # starting points offered of each kind (newest first)


# the passages "Find passages" offers, best first: the answer's evidence is among the first few,
# and a longer list hides the answer box below it
OFFERED = 10


def approved_rows(answers: list[ApprovedAnswer]) -> list[list[Any]]:
    """The table's rows: suspended ones first (the ledger's order), each with its reason."""
    return [[a.id, a.status, a.suspended_reason, a.question, " | ".join(a.variants),
             ",".join(a.groups), a.author, approved_day(a.approved_at),
             "; ".join(f"[{c.n}] {c.file}" + (f" p.{c.page}" if c.page else "")
                       for c in a.citations)]
            for a in answers]


class ApprovedHandlers(Handlers):
    """The editor's handlers (a part of `AdminTabHandlers`, ui/admin/tab.py)."""

    def sees_answer(self, admin: User, answer: ApprovedAnswer) -> bool:
        """Whether an admin may see, load, edit or remove an approved answer: one of its groups
        and one group of every document it cites are the admin's, as serving asks of an asker
        (see-all: any). A cited document no longer stored shows to see-all admins only."""
        if admin.see_all:
            return True
        mine = set(admin.groups)
        if not mine & set(answer.groups):
            return False
        for c in answer.citations:
            cited = self.store.ledger.document(c.doc_id)
            if cited is None or not mine & set(cited.meta.groups):
                return False
        return True

    def _visible_answers(self, user: User) -> list[ApprovedAnswer]:
        return [a for a in self.store.ledger.approved_answers() if self.sees_answer(user, a)]

    def _visible_answer(self, user: User, answer_id: str | int | None) -> ApprovedAnswer:
        """The approved answer of that id if the admin may see it; gr.Error otherwise, the
        same for one that is not there."""
        text = str(answer_id or "").strip()
        found = self.store.ledger.approved_answer(int(text)) if text.isdigit() else None
        if found is None or not self.sees_answer(user, found):
            raise UserError(f"no approved answer {text!r} in your groups")
        return found

    def approved_table(self, request: gr.Request) -> tuple[Any, ...]:
        """The table, the answers to edit and the starting points an admin may see."""
        user = self.admin(request)
        answers = self._visible_answers(user)
        edits = [(f"{a.id}: {a.question}", str(a.id)) for a in answers]
        return (approved_rows(answers), gr.update(choices=edits, value=None),
                gr.update(choices=self._starts(user), value=None))

    def _starts(self, user: User) -> list[tuple[str, str]]:
        """Knowledge gaps, thumbs-down answers and logged questions, as (label, "kind:ref")."""
        rows = self.users.question_records(viewer=user)
        gaps = insights.knowledge_gaps(rows, self.users.gap_notes())[:STARTS]
        down = [f for f in self.users.feedback(viewer=user) if f["rating"] < 0][:STARTS]
        logged = rows[::-1][:STARTS]
        return ([("blank", "scratch:")]
                + [(f"gap: {g.question}", f"gap:{g.key}") for g in gaps]
                + [(f"thumbs-down: {f['question']}", f"feedback:{f['id']}") for f in down
                   if f["question"]]
                + [(f"asked: {r.question}", f"log:{r.id}") for r in logged])

    def approved_start(self, start: str | None, request: gr.Request) -> tuple[Any, ...]:
        """A blank form, or one holding the picked gap's question, or a thumbs-down's or logged
        question's with its answer (a thumbs-down's) and the passages it cited offered, none
        ticked: the admin ticks what the approved answer cites ("Find passages" offers more)."""
        user = self.admin(request)
        kind, _, ref = (start or "scratch:").partition(":")
        question, text, cited = "", "", []
        if kind in ("gap", "feedback", "log"):
            question = next((label.split(": ", 1)[1] for label, value in self._starts(user)
                             if value == start), "")
        if kind == "feedback":
            row = next((f for f in self.users.feedback(viewer=user) if str(f["id"]) == ref), {})
            text, cited = row.get("answer") or "", json.loads(row.get("chunk_ids") or "[]")
        elif kind == "log":
            cited = next((list(r.chunk_ids) for r in self.users.question_records(viewer=user)
                          if str(r.id) == ref), [])
        return ("", question, text, gr.update(choices=self._labelled(cited), value=[]), "",
                f"{kind}:{ref}")

    def _labelled(self, chunk_ids: list[str]) -> list[tuple[str, str]]:
        """Passages to tick, each labelled by its file, page and first words (a chunk id no
        longer live by its id)."""
        snap = self.assistant.retriever.snapshot()
        out = []
        for chunk_id in chunk_ids:
            row = snap.row_of.get(chunk_id)
            if row is None:
                out.append((chunk_id, chunk_id))
                continue
            record = snap.docs[snap.doc_ids[row]]
            page = snap.pages[row][0]
            label = (Path(record.meta.path).name + (f" p.{page}" if page else "")
                     + f": {snap.texts[row][:160]}")
            out.append((label, chunk_id))
        return out

    def approved_load(self, answer_id: str | None, request: gr.Request) -> tuple[Any, ...]:
        """An approved answer in the form, its cited passages ticked, to edit."""
        found = self._visible_answer(self.admin(request), answer_id)
        cited = [(f"[{c.n}] {c.file}" + (f" p.{c.page}" if c.page else "") + f": {c.quote}",
                  c.chunk_id) for c in found.citations]
        return (str(found.id), found.question, found.answer,
                gr.update(choices=cited, value=[c.chunk_id for c in found.citations]),
                "\n".join(found.variants), f"{found.origin}:{found.origin_ref}",
                list(found.groups))

    def approved_find(self, question: str, cited: list[str] | None,
                      request: gr.Request) -> Any:
        """The passages retrieval finds for the question in the admin's groups, to cite; the
        ones already ticked stay."""
        user = self.admin(request)
        if not (question or "").strip():
            raise UserError("write the question first")
        kept = list(cited or [])
        passages = self.assistant.retrieve(question, user.groups)[:OFFERED]
        choices = [(f"{p.file}" + (f" p.{p.page}" if p.page else "") + f": {p.text[:160]}",
                    p.chunk_id) for p in passages]
        known = {c for _, c in choices}
        choices += [(c, c) for c in kept if c not in known]
        return gr.update(choices=choices, value=kept)

    def approved_save(self, answer_id: str, question: str, text: str, cited: list[str] | None,
                      variants: str, origin: str, groups: list[str] | None,
                      request: gr.Request) -> tuple[Any, ...]:
        """Save the form as an approved answer (an edit re-approves it) and record it."""
        user = self.admin(request)
        kind, _, ref = (origin or "scratch:").partition(":")
        chosen = list(groups or []) or ["all"]
        if not user.see_all and not set(chosen) <= set(user.groups):
            raise UserError(t("groups_outside", groups=", ".join(user.groups)))
        draft = Draft(question or "", text or "", [Ref(c) for c in cited or []], chosen,
                      (variants or "").splitlines(), kind or "scratch", ref,
                      int(answer_id) if (answer_id or "").strip().isdigit() else 0)
        if draft.id:
            self._visible_answer(user, draft.id)
        try:
            saved = self.assistant.save_approved(draft, user.name,
                                                 None if user.see_all else user.groups)
        except KbError as exc:
            raise UserError(str(exc)) from exc
        self.audit.record("answer.edit" if draft.id else "answer.add", user.name,
                          object=str(saved.id), address=self.address(request),
                          question=saved.question, groups=list(saved.groups),
                          cites=[c.chunk_id for c in saved.citations], origin=origin)
        return (str(saved.id), f"approved answer {saved.id} saved ({saved.status})",
                *self.approved_table(request))

    def approved_remove(self, answer_id: str, request: gr.Request) -> tuple[Any, ...]:
        user = self.admin(request)
        found = self._visible_answer(user, answer_id)
        self.assistant.approved.remove(found.id)
        self.audit.record("answer.remove", user.name, object=str(found.id),
                          address=self.address(request), question=found.question)
        return ("", f"approved answer {found.id} removed", *self.approved_table(request))


@dataclass
class ApprovedView:
    box: gr.Accordion
    show: gr.Button
    table: gr.Dataframe
    edit: gr.Dropdown
    start: gr.Dropdown
    answer_id: gr.Textbox
    origin: gr.Textbox
    question: gr.Textbox
    find: gr.Button
    cited: gr.CheckboxGroup
    text: gr.Textbox
    variants: gr.Textbox
    groups: gr.Dropdown
    save: gr.Button
    remove: gr.Button
    message: gr.Markdown

    @property
    def listing(self) -> list[Any]:
        """What `approved_table` fills, in its order."""
        return [self.table, self.edit, self.start]


def build_approved_view(lab: Any, groups_choices: list[str] | None = None) -> ApprovedView:
    """The editor's part of the admin tab, folded until opened."""
    with gr.Accordion(t("approved_answers"), open=False, elem_id="kb-approved") as box:
        lab(box, label="approved_answers")
        with gr.Row():
            start = lab(gr.Dropdown(choices=[], label=t("approved_start")),
                        label="approved_start")
            edit = lab(gr.Dropdown(choices=[], label=t("approved_edit")), label="approved_edit")
            show = lab(gr.Button(t("refresh"), size="sm"), value="refresh")
        with gr.Row():
            answer_id = gr.Textbox(label="id", lines=1, interactive=False, scale=0)
            origin = gr.Textbox(label="origin", lines=1, interactive=False, scale=0)
            question = lab(gr.Textbox(label=t("question"), lines=1,
                                       elem_id="kb-approved-question"), label="question")
            find = lab(gr.Button(t("approved_find"), size="sm", scale=0), value="approved_find")
        cited = lab(gr.CheckboxGroup(choices=[], label=t("approved_cite"),
                                     elem_id="kb-approved-cite"),
                    label="approved_cite")
        text = lab(gr.Textbox(label=t("approved_text"), lines=4, elem_id="kb-approved-text"),
                   label="approved_text")
        with gr.Row():
            variants = lab(gr.Textbox(label=t("approved_also"), lines=2,
                                       elem_id="kb-approved-also"), label="approved_also")
            groups = lab(gr.Dropdown(choices=groups_choices or [], value=["all"],
                                     multiselect=True, allow_custom_value=True,
                                     label=t("groups")), label="groups")
        with gr.Row():
            save = lab(gr.Button(t("approved_save"), variant="primary", size="sm"),
                       value="approved_save")
            remove = lab(gr.Button(t("delete"), variant="stop", size="sm"), value="delete")
        message = gr.Markdown()
        table = lab(gr.Dataframe(headers=APPROVED_HEADERS, label=t("approved_answers"),
                                 interactive=False), label="approved_answers")
    return ApprovedView(box, show, table, edit, start, answer_id, origin, question, find, cited,
                        text, variants, groups, save, remove, message)


def wire_approved_view(app: ApprovedHandlers, view: ApprovedView) -> None:
    view.show.click(app.approved_table, None, view.listing, api_name="approved_answers")
    view.box.expand(app.approved_table, None, view.listing, api_visibility="private")
    view.start.input(app.approved_start, view.start,
                     [view.answer_id, view.question, view.text, view.cited, view.variants,
                      view.origin], api_visibility="private")
    view.edit.input(app.approved_load, view.edit,
                    [view.answer_id, view.question, view.text, view.cited, view.variants,
                     view.origin, view.groups], api_visibility="private")
    view.find.click(app.approved_find, [view.question, view.cited], view.cited,
                    api_name="approved_find")
    view.save.click(app.approved_save,
                    [view.answer_id, view.question, view.text, view.cited, view.variants,
                     view.origin, view.groups],
                    [view.answer_id, view.message, *view.listing], api_name="approved_save")
    view.remove.click(app.approved_remove, view.answer_id,
                      [view.answer_id, view.message, *view.listing], api_name="approved_remove")
