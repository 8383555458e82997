"""The settings sections that have a module of their own; core/config.py reads each with the
others into the one `Settings` object (`settings.auth`, `settings.channels`, ...).

    fields.py    a field as an operator's key (`doc`) or a research knob (`tuning`)
    auth.py      the `[auth]` and `[audit]` sections: sign-in, groups, the audit trail
    retrieve.py  the `[retrieve]` section: candidates, fusion, across languages
    sources.py   the folders kept in sync (`[[sources]]`) and the brake on deletes (`[sync]`)
    channels.py  the chat platforms (`[channels]`, a table per platform, secrets from `KB_`)

It imports the core hall only (errors, group names), never core/config.py, which imports it. A
new section with more than a handful of keys is a module here, read in core/config.py beside
the others.
"""
