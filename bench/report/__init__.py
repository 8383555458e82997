"""BENCHMARKS.md and the detail section of docs/benchmarks-history.md, written from templates
and the recorded reports; `python -m bench report [--check]` (render.py) writes or checks both.

    BENCHMARKS.template.md  the page's words: headline tables, each with its run line, and the
                            goals table; `{{section.name}}` where a figure goes
    history.template.md     the words of the history's section "The current results in detail"
    recorded.py             SOURCES: the report files behind each table (bench/eval_*.json,
                            bench/results/, the answerability model's note), and a run's line
                            under its table (command, machine, date, report)
    render.py               the templates filled in, the history's links checked, the files
                            written or compared
    goals.py                each goal judged from the reports: its figures and met or not
    sections.py             the quality, follow-up, ingest, query and GPU sections' figures
    crosslang.py            questions across languages: by direction, cost, translation, refusing
    servers.py              load, API overhead, large API bodies
    signin.py               LDAP sign-in, the audit trail, wrong-login floods
    owners.py               approved answers and the folder sync pass
    library.py              the shared sets in one library store, and that store grown

A section module returns its placeholders' values, figures formatted as the page shows them
(`sections.quality(rec)["rows"]` fills `{{quality.rows}}`); the words stay in the templates. A
placeholder no module fills, a value no template uses, and a link from the page to a heading the
history lacks are errors. Recording a new run: its report under bench/results/, its Source in
recorded.py pointed at it, a placeholder in the template where its figure goes, then
`python -m bench report`. These modules import bench/report/ only (and the reports they read).
"""
