"""The sections of `Settings` that have a module of their own; core/config.py reads each with the
rest of config.toml and the `KB_` variables.

    auth.py      the `[auth]` and `[audit]` sections: sign-in, directory groups, the audit trail
    retrieve.py  the `[retrieve]` section, its research knobs marked for docs/tuning.md
    sources.py   the folders kept in sync (`[[sources]]`, `[sync]`)
    privacy.py   what kb keeps about people: `[privacy]` (masking) and `[retention]` (days kept)

It imports core's hall only (config_fields.py). The next section with more than a few keys is a
module here that core/config.py reads.
"""
