"""Many users at once against the real app: askers through the page and the API, floods of wrong
sign-ins, large API bodies and chat platforms' callbacks. Each module is a benchmark run from the
repository root that prints one JSON report, with one user alone (or the code before) measured in
the same run.

    askers.py       50 askers, half through the page and half through `POST /api/ask`, with the
                    vLLM CPU server, beside one asker alone (`python -m bench load`);
                    tests/ui/test_load.py runs a short form of it
    login_flood.py  40 wrong sign-ins at once while a signed-in page is timed (`login-flood`);
                    the app served beside the code before, the attacker's process, a request
                    timed during an attack, which body_flood.py shares
    body_flood.py   a token holder's large bodies to `/v1/chat/completions` (8 of 180,001
                    messages at once, or one of 300,000 numbers) while another user's
                    `GET /v1/models` is timed (`body-flood`)
    channels_ack.py the five chat platforms' signed callbacks, one alone and 20 at once each,
                    timed to their acknowledgement, then answered (`channels-ack`)

    .venv/bin/python -m bench load --full
    .venv/bin/python -m bench.load.login_flood --runs 10 --before /tmp/before
    .venv/bin/python -m bench.load.body_flood --runs 3 --before /tmp/before
    .venv/bin/python -m bench.load.channels_ack --rounds 3

A module here may import `core/` to `ui/`, devtools/, bench/common.py and its neighbours here, never
another room of bench/. The next benchmark of many users at once goes here.
"""
