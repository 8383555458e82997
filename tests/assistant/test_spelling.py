"""A question's misspelt words read as the library spells them (assistant/retrieve/spelling.py):
English words an edit or two from a library word and unknown to the dictionary, Chinese words of
the same sound one character apart; real words, names and common words left as they are."""

from __future__ import annotations

from assistant.retrieve.spelling import Speller, edits, misspelt
from core.text import tokenize

TEXTS = [
    "Itemized receipts must be included for any reimbursement requests over $25.",
    "Submit your expenses every month. Book flights two weeks ahead.",
    "Receipts for expenses, and the expenses of teammates.",
    "用人单位应当向劳动者支付经济补偿。经济补偿按劳动者在本单位工作的年限支付。",
    "职工在年休假期间享受与正常工作期间相同的工资收入。同时，单位应当一致执行。",
]
KNOWN = frozenset({"clock", "react", "manger"})  # the dictionary's English (CC-CEDICT's, in use)


def speller() -> Speller:
    vocab = {t: i for i, t in enumerate(dict.fromkeys(t for x in TEXTS for t in tokenize(x)))}
    return Speller(vocab, TEXTS, lambda: KNOWN)


def test_misspelt_english_words_are_read_as_the_librarys_words() -> None:
    spell = speller()
    assert spell.terms("Do I need reciepts for small expences?") == ["receipt", "expens"]
    assert spell.terms("How far in advance do I book flihgts?") == ["flight"]
    assert edits("flihgts", "flights") == 1
    assert misspelt("parantal", "parental") and not misspelt("hire", "fire")


def test_real_words_names_and_short_words_are_left_alone() -> None:
    spell = speller()
    assert spell.terms("Will being sick reset my clock?") == []  # a word the dictionary knows
    assert spell.terms("Can I expense my Receits card?") == []  # a capitalised name
    assert spell.terms("Do I need receipts for expenses?") == []  # the library's own words
    assert spell.terms("Can I bok it?") == []  # fewer than four letters


def test_chinese_words_of_the_same_sound_one_character_apart() -> None:
    spell = speller()
    assert spell.terms("经济补尝的月工资包括哪些收入？") == ["补偿"]
    assert spell.terms("今年还有年修假吗？") == ["休假", "年休假"]
    # common words (同事 is not a misspelt 同时), and stop words (有几 is not 有机), stay
    assert spell.terms("同事一直加班，年休假有几天？") == []
