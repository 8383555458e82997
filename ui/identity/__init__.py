"""Who is asking: users and their groups, sign-in (password, LDAP or Active Directory, a trusted
header, OpenID Connect), web sessions, API tokens, and the guard in front of Gradio's routes.

    users.py     users, groups, passwords and API tokens; the questions they asked
    login.py     the web login: password checks throttled off the event loop, sessions that
                 expire and end with the account
    guard.py     the guard in front of Gradio's own routes; Gradio's temp folder
    proxies.py   which address a request comes from (`ui.trusted_proxies`)
    signin.py    who may sign in, and how: local passwords, the directory, the break-glass admin
    ldap.py      the directory adapter (LDAP, Active Directory)
    groups.py    directory groups to access groups (`auth.group_map`)
    header.py    sign-in by a trusted header (oauth2-proxy)
    follow.py    directory users read again off the event loop
    oidc.py      OpenID Connect: the code flow and every ID token check
    oidc_web.py  the `/login/oidc` routes

It imports the ui hall (the audit trail) and the floors below, no other room. The next sign-in
method gets its adapter beside ldap.py and oidc.py, its routes like oidc_web.py, and its people
kept as users by signin.py.
"""
