"""The top floor: how people and programs reach kb. The modules here are the floor's hall, which
every room may use; the rooms import each other one way only (tests/test_layers.py checks).

    wiring.py        the one place that builds the parts for a process: store, assistant, users
    audit.py         the audit trail as the app and the CLI write it
    conversations.py each user's conversations
    metrics.py       what an operator watches: `/metrics` and one log line per question
    i18n.py          Chinese and English labels; `Labels`, which follow the page's language
    gate.py          how many questions a process takes on at once (`ui.queue_depth`)
    handlers.py      what every handler of the page stands on: services, who asks, the gate

    cli/             `kb`, the command line
    web/             the web process: one app serving the page, the APIs and sign-in
    page/            the Gradio page: chat, sources, conversations
    admin/           the admin tab's views
    api/             the machine interfaces: `/api`, `/v1`, MCP, the chat platforms
    identity/        users, sign-in, sessions and the guard

It imports every floor below, through their public functions (`Assistant.ask`,
`ingest_paths`, `reindex`), and holds no retrieval or parsing logic. Rooms import the hall:
web/ imports page/, admin/, api/ and identity/; page/ imports admin/; api/ imports page/ and
identity/; cli/ imports web/ and api/. A new way in for people goes into page/ or admin/, for
programs into api/; a name two rooms need moves into the hall.
"""
