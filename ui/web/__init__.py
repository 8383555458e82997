"""The web process: one FastAPI app that serves the page, the APIs, the sign-in routes and
`/metrics`, with the middleware in front of all of them (`kb serve`).

    server.py         `create_server` and `serve`: routes, the middleware's order, the page
                      mounted, the ledger followed
    bodies.py         request bodies capped before anything parses them
    metrics_access.py who may read `/metrics`
    login_notice.py   one line on the sign-in page for what Gradio's form leaves unsaid
    quiet.py          a stop with tabs open ends in seconds, without a traceback per stream

It imports the ui hall and every room that serves a route (page/, admin/, api/, identity/);
only cli/ imports it. A new route is mounted in `create_server` from the room that holds it; a
new middleware goes beside bodies.py.
"""
