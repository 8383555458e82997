"""The admin tab: what admins see and do on the page. Every handler is refused to anyone but an
admin and shows only what lies in the admin's groups.

    tab.py          the tab as the page shows it: its components and their events
    documents.py    the tab's main handlers: uploads, delete, re-index, the tables, the due
                    list, the insights and the audit trail
    uploads.py      uploads checked by content, size and name; the tables' rows
    policy_dates.py the documents due for review or expiring; the dates an upload gives
    insights.py     use, latency, cited documents and knowledge gaps (pure)
    figures.py      the status, a run's summary, the insights' totals and the audit details
                    as people read them (pure)
    approved.py     the editor of approved answers
    audit.py        the audit trail, filtered and downloaded
    sources.py      the folders kept in sync, and their `/metrics` gauges

It imports the ui hall and the floors below; page/ imports it, never the other way. A new view
is a module here with its rows, its handlers (a `Handlers` subclass mixed into
`AdminTabHandlers`), and its `build_` and `wire_` functions, called from tab.py.
"""
