"""Pseudo-relevance feedback: a question that shares few words with its passage often shares
them with the passages BM25 finds first. The rarest terms those top passages have in common
are added to the question for one more lexical ranking (fused like the others).

    feedback_terms(["parental", "leav"], ["Parental leave: 12 weeks, paid.", ...], idf, 5)
        -> ["12", "paid", ...]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from core.text import tokenize


def feedback_terms(
    query_tokens: Sequence[str],
    texts: Sequence[str],
    idf: Callable[[str], float | None],
    n_terms: int,
) -> list[str]:
    """The `n_terms` terms, not in the question, that the most of `texts` hold, rarer first
    on ties (document frequency among the texts times idf); only terms two texts share.

    feedback_terms(["a"], ["a b c", "b c d"], lambda t: 1.0, 1) -> ["b"]
    """
    asked = set(query_tokens)
    held = Counter(t for text in texts for t in set(tokenize(text)) if t not in asked)
    scored = [
        (count * (idf(t) or 0.0), t) for t, count in held.items() if count >= 2 and idf(t)
    ]
    return [t for _, t in sorted(scored, key=lambda x: (-x[0], x[1]))[:n_terms]]
