"""The settings of what kb keeps about people: `[privacy]` (personal numbers masked in what kb
keeps and shows admins: core/privacy.py) and `[retention]` (how many days each kind of record
is kept, and how often the pass that prunes them runs: store/retention.py); core/config.py reads
them with the other sections (docs/deploy.md, "What kb keeps about people").

Every limit is in days; 0 keeps that kind of record for ever. The defaults keep a year of
questions, conversations, feedback and knowledge gaps, and a month of model-server logs and of
the files of deleted uploads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.settings.fields import doc


@dataclass(frozen=True)
class PrivacySettings:
    mask: bool = field(
        default=True, metadata=doc("mask ID, phone, card numbers and e-mail addresses in what "
                                    "kb keeps and shows admins (the model sees them)"))


@dataclass(frozen=True)
class RetentionSettings:
    questions_days: float = field(
        default=365.0, metadata=doc("the question log (questions, answers, timings) and the "
                                     "feedback on them; 0: for ever"))
    gaps_days: float = field(
        default=365.0, metadata=doc("questions that are knowledge gaps (abstained on or rated "
                                     "down) instead of questions_days; 0: for ever"))
    feedback_days: float = field(
        default=365.0, metadata=doc("thumbs up and down with their comments; 0: for ever"))
    conversations_days: float = field(
        default=365.0, metadata=doc("conversation turns, and answers in chat platforms' "
                                     "threads (a conversation goes with its last turn); 0: for "
                                     "ever"))
    uploads_days: float = field(
        default=30.0, metadata=doc("files of uploaded documents since deleted, counted from "
                                    "the pass that found them deleted; 0: for ever"))
    logs_days: float = field(
        default=30.0, metadata=doc("log files kb writes in the store (the model server's), "
                                    "by last write; 0: for ever"))
    every_hours: float = field(
        default=24.0, metadata=doc("how often kb serve, kb worker or kb sync runs the pass "
                                    "(one of them at a time); 0: only `kb prune`"))

    def limits(self) -> dict[str, float]:
        """Each kind of record's limit in days (0: kept for ever)."""
        return {"questions": self.questions_days, "gaps": self.gaps_days,
                "feedback": self.feedback_days, "conversations": self.conversations_days,
                "uploads": self.uploads_days, "logs": self.logs_days}
