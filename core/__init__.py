"""The bottom floor: what every floor above shares and nothing of theirs: one typed settings
object, the exception tree, the domain types, the text rules both pipelines follow and the narrow
interfaces to outside services.

    config.py            `Settings`, read once from config.toml and `KB_` variables, its sections
    offline.py           the environment that keeps every library off the model hubs
    errors.py            the exception tree, drawn in its docstring
    types.py             the domain types (`Chunk`, `Passage`, `Answer`, `DocRecord`, ...)
    text.py              the text rules (CJK, language, sentences, index terms, `TEXT_VERSION`)
    access.py            group names
    ports.py             the interfaces to outside services (embedder, vectors, generator, ...)
    policy_dates.py      when a document applies: effective, review-by and expiry dates

    settings/            the sections with a module each: `[auth]`, `[retrieve]`, the synced
                         folders, `[channels]`; a field as a key or a research knob

It imports no other floor. A name two floors need lives here; the next settings section goes
into settings/.
"""
