"""The bottom floor: what every floor above shares and nothing of theirs: one typed settings
object, the exception tree, the domain types, the text rules both pipelines follow and the narrow
interfaces to outside services.

    config.py            `Settings`, read once from config.toml and `KB_` variables, its sections
    auth_settings.py     the `[auth]` and `[audit]` sections
    retrieve_settings.py the `[retrieve]` section
    sources_settings.py  the folders kept in sync (`[[sources]]`, `[sync]`)
    config_fields.py     a field as an operator's key or a research knob (docs/tuning.md)
    offline.py           the environment that keeps every library off the model hubs
    errors.py            the exception tree, drawn in its docstring
    types.py             the domain types (`Chunk`, `Passage`, `Answer`, `DocRecord`, ...)
    text.py              the text rules (CJK, language, sentences, index terms, `TEXT_VERSION`)
    access.py            group names
    ports.py             the interfaces to outside services (embedder, vectors, generator, ...)
    policy_dates.py      when a document applies: effective, review-by and expiry dates

It imports no other floor. A name two floors need lives here. It holds twelve modules, a room's
most (tests/test_layers.py): the next settings section starts a `settings/` room here, with the
four settings modules moved into it.
"""
