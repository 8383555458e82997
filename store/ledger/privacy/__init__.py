"""What the ledger keeps about people, and for how long: the parts `Ledger` mixes in for legal
holds, a person's export and erasure, the retention pass's batches, and the form of the audit
trail's records that lets an erasure redact their details without breaking the chain.

    audit_chain.py  how a record of the trail is hashed and checked (both of its forms)
    people.py       every table that names a person: legal holds, a person's data, its erasure
    retention.py    records past their retention deleted, old text masked, a batch at a time

It imports core and the ledger's hall (base.py, audit.py); the hall's audit.py hashes through
audit_chain.py. A new table of per-person rows is a line of `PERSONAL` in people.py, and of
`AGED` in retention.py when it has a retention limit.
"""
