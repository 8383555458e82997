"""The other language's evidence for refusing or answering: a question whose best evidence is
in the other language (the space's gate fired: `space.py`) and that the answerability model
(`assistant/answerable.py`) would refuse on its own words has its evidence read again in the
carried words (`bridge.Bridge.carried_terms`) where passages of the other language are among
those the model reads; the retriever keeps whichever finds more of it (`read_evidence`). A
question its own words answer carries nothing: the dictionary is not read for it.

    reads_across(settings, "en", evidence, crosses(own, snap, passages)) -> True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

from assistant.answerable import AMOUNT_PASSAGES, configured_model
from assistant.retrieve.snapshot import Snapshot
from core.config import Settings
from core.types import Passage


def crosses(own: npt.NDArray[np.bool_], snap: Snapshot, passages: Sequence[Passage]) -> bool:
    """Whether passages of the other language (`own`: which snapshot rows are in the question's)
    are among those the answerability model reads (the first AMOUNT_PASSAGES)."""
    return not all(own[snap.row_of[p.chunk_id]] for p in passages[:AMOUNT_PASSAGES])


def reads_across(settings: Settings, lang: str, evidence: Mapping[str, float], crossed: bool
                 ) -> bool:
    """Whether a question (in `lang`) should have its evidence read in the other language
    too: retrieve.crosslang_evidence is on, passages of the other language are among those the
    model reads (`crossed`), and it would refuse the question on `evidence`."""
    if not settings.retrieve.crosslang_evidence or not crossed:
        return False
    return configured_model(settings).refuses(evidence, lang)
