"""Lexical retrieval: one tokenizer for chunks and questions, and an in-memory BM25 index.

Chinese runs are cut with jieba in search mode (words and their dictionary sub-words), plus
character bigrams so a different segmentation still matches; Chinese numerals also yield their
Arabic value (十六 -> "16"). English is lower-cased, stop words dropped and suffixes stripped by
a light stemmer. Questions (not chunks) are expanded with a small table of Chinese paraphrases.

A question can name a document ("数据安全法从什么时候开始施行？"): `TitleIndex` finds the documents
whose titles share a run with the question (three or more Chinese characters, or two or more
English content words) and how long the longest such run is.

The index keeps one BM25 weight per (term, row) in a column-compressed sparse matrix, so a
query sums a few columns into a score vector; an access mask is applied to that vector before
the top-k, and a filtered search costs what an unfiltered one does.

    BM25Index.build([("c1", tokenize("年休假天数"))]).search(tokenize_query("年假"), 5)
        -> [("c1", 0.23...)]
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from array import array
from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from core.errors import ConfigError
from core.text import EN_STOP, IDEOGRAPH_RUN, stem, tokenize

# --- question-side paraphrases ------------------------------------------------------------

# Question-side paraphrases live in a data file a deployment can edit (retrieve.synonyms).
SHIPPED_SYNONYMS = Path(__file__).parents[1] / "data" / "zh_synonyms.toml"
Synonyms = Mapping[str, Sequence[str]]
# Query terms' weights where they are not 1 (a follow-up's history words weigh less); None: all 1.
Weight = Mapping[str, float] | None


@lru_cache(maxsize=8)
def load_synonyms(path: str = "") -> Synonyms:
    """The paraphrase table at `path` ("" for the shipped one): word -> terms also searched.

    load_synonyms()["年假"] -> ["年休假"]
    """
    source = Path(path) if path else SHIPPED_SYNONYMS
    try:
        table = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(
            f"{source}: not a synonym table ({exc}); fix it or set retrieve.synonyms to empty "
            "for the shipped one"
        ) from exc
    if not all(isinstance(v, list) and all(isinstance(x, str) for x in v) for v in table.values()):
        raise ConfigError(f'{source}: each entry must read "word" = ["term", ...]')
    return {word: tuple(alts) for word, alts in table.items()}




def tokenize_query(
    text: str, *, synonyms: Synonyms | bool = True, bigrams: bool = False
) -> list[str]:
    """`tokenize` for a question, plus the paraphrases of its words (`synonyms`: a table, True
    for the shipped one, False for none), each term once.

    tokenize_query("加班") -> ["加班", "延长", "工作", "时间", ...]
    """
    tokens = tokenize(text, bigrams=bigrams)
    if synonyms:
        norm = unicodedata.normalize("NFKC", text)
        extra: list[str] = []
        table = load_synonyms() if synonyms is True else synonyms
        for word, alts in table.items():
            if word in norm:
                for alt in alts:
                    extra.extend(tokenize(alt, bigrams=bigrams))
        tokens.extend(extra)
    return list(dict.fromkeys(tokens))


# --- document names ---------------------------------------------------------------------

_PHRASE_BREAK = re.compile(r"[^a-z'\s]+")  # punctuation, digits and CJK end an English phrase
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
MIN_NAME_CJK = 3  # two characters are one common word (公司, 职工); three start to name a thing
MIN_NAME_WORDS = 2


def name_runs(text: str) -> list[tuple[str, ...]]:
    """The runs of `text` a name can be quoted from: Chinese runs as characters, English
    phrases (between punctuation) as stemmed content words; runs too short to name are dropped.

    name_runs("《安全法》Travel Guide: x") -> [("安", "全", "法"), ("travel", "guid")]
    """
    text = unicodedata.normalize("NFKC", text).lower()
    runs: list[tuple[str, ...]] = [
        tuple(r) for r in IDEOGRAPH_RUN.findall(text) if len(r) >= MIN_NAME_CJK
    ]
    for phrase in _PHRASE_BREAK.split(text):
        words = tuple(stem(w) for w in _WORD.findall(phrase) if w not in EN_STOP)
        if len(words) >= MIN_NAME_WORDS:
            runs.append(words)
    return runs


def _gram(units: Sequence[str]) -> str:
    """How a run of units is looked up: Chinese as the string, English padded by spaces."""
    return f" {' '.join(units)} " if units[0].isascii() else "".join(units)


class TitleIndex:
    """Document titles by the runs a question could quote from them (the shortest quotable
    piece of each run is the key; a hit is then extended as far as the title goes on).

    TitleIndex({"d1": "中华人民共和国数据安全法"}).named("数据安全法什么时候施行？") -> {"d1": 5}
    """

    def __init__(self, titles: dict[str, str]) -> None:
        self._text: dict[str, str] = {}
        self._docs: dict[str, list[str]] = {}
        for doc_id, title in titles.items():
            runs = name_runs(title)
            self._text[doc_id] = "\n".join(_gram(run) for run in runs)
            keys = {
                _gram(run[i : i + _least(run)])
                for run in runs
                for i in range(len(run) - _least(run) + 1)
            }
            for key in keys:
                self._docs.setdefault(key, []).append(doc_id)

    def named(self, question: str, among: Container[str] | None = None) -> dict[str, int]:
        """doc id -> the length (characters or words) of the longest run of its title that the
        question quotes; documents it does not name (or not `among` those given) are left out."""
        out: dict[str, int] = {}
        for run in name_runs(question):
            least = _least(run)
            for i in range(len(run) - least + 1):
                for doc_id in self._docs.get(_gram(run[i : i + least]), ()):
                    if among is not None and doc_id not in among:
                        continue
                    text, j = self._text[doc_id], i + least
                    while j < len(run) and _gram(run[i : j + 1]) in text:
                        j += 1
                    out[doc_id] = max(out.get(doc_id, 0), j - i)
        return out


def _least(run: Sequence[str]) -> int:
    return MIN_NAME_WORDS if run[0].isascii() else MIN_NAME_CJK


# --- BM25 ---------------------------------------------------------------------------------

BoolMask = npt.NDArray[np.bool_]


class BM25Index:
    """BM25 over stored token lists: Lucene's variant by default (idf never negative, as in
    bm25s), or the classic Okapi one with rank_bm25's idf floor (`idf="okapi"`).

    BM25Index.build([("a", ["年假"]), ("b", ["加班"])]).search(["加班"], 1) -> [("b", 0.27...)]
    """

    def __init__(
        self,
        ids: list[str],
        vocab: dict[str, int],
        weights: sp.csc_matrix,
    ) -> None:
        self.ids = ids
        self.vocab = vocab
        self._weights = weights
        self._rows: dict[str, int] | None = None  # chunk id -> row, made when first asked
        df = np.diff(weights.indptr).astype(np.float64)
        # Lucene's idf of each term, for `coverage` (whatever idf variant the weights use).
        self._idf = np.log1p((len(ids) - df + 0.5) / (df + 0.5)).astype(np.float32)

    @classmethod
    def build(
        cls,
        docs: Iterable[tuple[str, Sequence[str]]],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        idf: str = "lucene",
        epsilon: float = 0.25,
    ) -> BM25Index:
        """Index `(chunk_id, tokens)` pairs; rows follow their order.

        BM25Index.build([("c1", ["a", "b"])]).row_of("c1") -> 0
        """
        ids: list[str] = []
        vocab: dict[str, int] = {}
        setdefault = vocab.setdefault
        # C arrays, not lists: a million chunks' term ids as Python ints would take gigabytes
        term_ids = array("i")
        lengths = array("i")
        for cid, tokens in docs:
            ids.append(cid)
            term_ids.extend([setdefault(t, len(vocab)) for t in tokens])
            lengths.append(len(tokens))
        n_docs, n_terms = len(ids), len(vocab)
        cols = np.frombuffer(term_ids, dtype=np.int32) if term_ids else np.zeros(0, np.int32)
        doc_len = np.frombuffer(lengths, dtype=np.int32).astype(np.int64) if lengths else (
            np.zeros(0, np.int64)
        )
        rows = np.repeat(np.arange(n_docs, dtype=np.int32), doc_len)
        tf = sp.csc_matrix(
            (np.ones(len(cols), dtype=np.float32), (rows, cols)), shape=(n_docs, n_terms)
        )
        tf.sum_duplicates()
        df = np.diff(tf.indptr).astype(np.float64)
        if idf == "lucene":
            idf_v = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        elif idf == "okapi":
            idf_v = np.log(n_docs - df + 0.5) - np.log(df + 0.5)
            floor = epsilon * float(idf_v.mean()) if n_terms else 0.0
            idf_v[idf_v < 0] = floor
        else:
            raise ValueError(f"BM25 idf {idf!r}: use 'lucene' or 'okapi'")
        avgdl = float(doc_len.mean()) if n_docs else 1.0
        norm = (k1 * (1 - b + b * doc_len / (avgdl or 1.0))).astype(np.float64)
        col_of = np.repeat(np.arange(n_terms), np.diff(tf.indptr))
        f = tf.data.astype(np.float64)
        boost = 1.0 if idf == "lucene" else k1 + 1  # Lucene drops the constant (k1 + 1)
        data = idf_v[col_of] * f * boost / (f + norm[tf.indices])
        weights = sp.csc_matrix((data.astype(np.float32), tf.indices, tf.indptr), shape=tf.shape)
        return cls(ids, vocab, weights)

    def __len__(self) -> int:
        return len(self.ids)

    def row_of(self, chunk_id: str) -> int:
        """The row of `chunk_id`, for building `allowed` masks (KeyError if not indexed).

        index.row_of("c1") -> 0
        """
        return self._row[chunk_id]

    @property
    def _row(self) -> dict[str, int]:
        if self._rows is None:
            self._rows = {cid: i for i, cid in enumerate(self.ids)}
        return self._rows

    def mask(self, chunk_ids: Iterable[str]) -> BoolMask:
        """A boolean mask over the rows with the given (indexed) chunks set.

        index.mask(["c1"]) -> array([ True, False, ...])
        """
        out = np.zeros(len(self.ids), dtype=bool)
        rows = [self._row[c] for c in chunk_ids if c in self._row]
        out[rows] = True
        return out

    def scores(
        self, query_tokens: Sequence[str], weight: Weight = None
    ) -> npt.NDArray[np.float32]:
        """The BM25 score of every row (a query term counts once per occurrence, times its
        `weight` where one is given: the words a follow-up's history supplied weigh less).

        index.scores(["加班"]) -> array([0., 0.27...], dtype=float32)
        index.scores(["加班"], weight={"加班": 0.5}) -> array([0., 0.13...], dtype=float32)
        """
        out = np.zeros(len(self.ids), dtype=np.float32)
        w = self._weights
        for _, span, factor in self._postings(query_tokens, weight):
            data = w.data[span]
            out[w.indices[span]] += data if factor == 1.0 else data * factor
        return out

    def coverage(
        self,
        query_tokens: Sequence[str],
        rows: Sequence[int] | None = None,
        weight: Weight = None,
    ) -> npt.NDArray[np.float32]:
        """Per row (or per one of `rows`, in their order), the summed idf (times `weight`, as
        in `scores`) of the distinct query terms it contains (how much of the question a
        passage covers, however often it repeats a term). Given `rows`, it looks only them up
        in each term's sorted postings: a few candidates of a million rows cost microseconds,
        not a pass over every row.

        index.coverage(["加班", "年假"]) -> array([0.69..., 0.69...], dtype=float32)
        index.coverage(["加班"], rows=[1]) -> array([0.69...], dtype=float32)
        """
        indices = self._weights.indices
        distinct = list(dict.fromkeys(query_tokens))
        if rows is None:
            out = np.zeros(len(self.ids), dtype=np.float32)
            for j, span, factor in self._postings(distinct, weight):
                out[indices[span]] += self._idf[j] * factor
            return out
        wanted = np.asarray(rows, dtype=indices.dtype)
        out = np.zeros(len(wanted), dtype=np.float32)
        for j, span, factor in self._postings(distinct, weight):
            posting = indices[span]  # ascending rows (the matrix is canonical)
            at = np.searchsorted(posting, wanted).clip(max=max(len(posting) - 1, 0))
            out[posting[at] == wanted] += self._idf[j] * factor
        return out

    def scores_at(
        self, query_tokens: Sequence[str], rows: Sequence[int], weight: Weight = None
    ) -> npt.NDArray[np.float32]:
        """`scores` of just `rows`, in their order, looked up in each query term's sorted
        postings as `coverage` does: candidates another retriever found get their BM25 score
        without a pass over every row.

        index.scores_at(["加班"], rows=[1]) -> array([0.27...], dtype=float32)
        """
        w = self._weights
        wanted = np.asarray(rows, dtype=w.indices.dtype)
        out = np.zeros(len(wanted), dtype=np.float32)
        for _, span, factor in self._postings(query_tokens, weight):
            posting = w.indices[span]
            if not len(posting):
                continue
            at = np.searchsorted(posting, wanted).clip(max=len(posting) - 1)
            found = posting[at] == wanted
            out[found] += w.data[span][at[found]] * factor
        return out

    def idf(self, token: str) -> float | None:
        """The (Lucene) idf of an indexed token; None for a token no row holds.

        index.idf("加班") -> 0.69...
        """
        j = self.vocab.get(token)
        return None if j is None else float(self._idf[j])

    def _postings(
        self, tokens: Iterable[str], weight: Weight = None
    ) -> Iterator[tuple[int, slice, float]]:
        """For each indexed token: its column, the span of its rows in the matrix, and its
        weight (1 unless `weight` names it)."""
        indptr = self._weights.indptr
        for t in tokens:
            j = self.vocab.get(t)
            if j is not None:
                yield j, slice(indptr[j], indptr[j + 1]), weight.get(t, 1.0) if weight else 1.0

    def search(
        self,
        query_tokens: Sequence[str],
        k: int,
        allowed: BoolMask | None = None,
        weight: Weight = None,
    ) -> list[tuple[str, float]]:
        """The `k` best rows with a positive score among `allowed` (all when None), best
        first; equal scores go to the lower row.

        index.search(["加班"], 5, allowed=index.mask(["b"])) -> [("b", 0.27...)]
        """
        if k <= 0:
            return []
        scores = self.scores(query_tokens, weight)
        if allowed is not None:
            if allowed.shape != scores.shape:
                raise ValueError(
                    f"allowed mask has {allowed.shape[0]} rows, index has {len(self.ids)}"
                )
            # in place, as a product (scores are finite: it is exact); assigning zero through
            # the inverted mask took 1.0 ms against 0.5 at a million rows (the 1M bench's masks)
            np.multiply(scores, allowed, out=scores)
        hits = np.flatnonzero(scores > 0)
        if hits.size > k:
            hits = hits[np.argpartition(-scores[hits], k - 1)[:k]]
        order = hits[np.lexsort((hits, -scores[hits]))]
        return [(self.ids[i], float(scores[i])) for i in order]
