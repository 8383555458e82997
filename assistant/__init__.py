"""The fourth floor: a question to a cited answer. `Assistant.ask` reads the question, retrieves
with the asker's groups, packs the 4K window, asks the model and checks its citations.

    answer.py        `Assistant.ask` / `ask_stream`: the query pipeline, step by step
    exits.py         the answers without (or instead of) the model's: refused, retrieval-only,
                     fallback
    answer_json.py   the JSON of an answer (`kb ask --json`, the API)
    followup.py      what a follow-up is searched for: the question read with the earlier ones
    answerable.py    when to refuse: a logistic regression over retrieval evidence
    pack.py          the token budget and the packing of passages
    merge.py         adjacent chunks of one document merged into one passage
    window.py        packing into the 4K window (hits, then their neighbours), the prompt sent
    prompt.py        prompts (untrusted text defused)
    cite.py          citations parsed and checked against their passages
    best_sentence.py what answers in a passage: its sentence or table rows, quoted first
    section.py       the passages of a cited Word section

    retrieve/        hybrid retrieval with access control, and crosslang/ (across languages)
    llm/             the model server: the client, where it is, replicas, tokens, the loop guard
    approved/        answers admins approved, served first
    evaluation/      `kb eval`
    serving/         `kb llm serve`, the demo's model server, the tiny test models

It imports core, store and (evaluation/, for a set's documents) ingest. A new step of answering
is a module here beside the steps it sits between; a new kind of question-side search goes
into retrieve/, a new model client into llm/.
"""
