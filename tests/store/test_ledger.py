"""The ledger on both dialects (a SQLite file, a real PostgreSQL from devtools/postgres.py): the
same migrations, the same methods, the same answers; and the statement translation itself."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.errors import ConfigError, StoreError
from core.types import Answer, Chunk, Citation, DocMeta
from store.ledger import MIGRATIONS, Ledger, postgres_ddl, redact_url, to_postgres


@pytest.fixture
def ledger(ledger_url: str, tmp_path: Path) -> Iterator[Ledger]:
    opened = Ledger(ledger_url or tmp_path / "ledger.sqlite")
    yield opened
    opened.close()


def meta(doc_id: str, groups: tuple[str, ...] = ("all",)) -> DocMeta:
    return DocMeta(id=doc_id, path=f"{doc_id}.pdf", root="/docs", sha256="ab" * 32, size=10**9,
                   mtime=1764540000.123456, title="年假 100%", lang="zh", groups=groups)


def chunks(doc_id: str, n: int) -> list[Chunk]:
    return [Chunk(f"{doc_id}-{i}", doc_id, i, f"第{i}条 用户? 50% 'quoted'", ("章", f"节{i}"),
                  i + 1, i + 2) for i in range(n)]


def test_documents_chunks_and_generations(ledger: Ledger) -> None:
    assert ledger.dialect in ("sqlite", "postgres") and ledger.generation() == 0
    gone = ledger.replace_document(meta("d1"), chunks("d1", 3), [["a", "b"]] * 3)
    assert gone == [] and ledger.generation() == 1 and ledger.chunk_count() == 3
    gone = ledger.replace_document(meta("d1"), chunks("d1", 2), [["c"]] * 2)
    assert gone == ["d1-2"] and ledger.generation() == 2
    record = ledger.document("d1")
    assert record is not None and record.meta.size == 10**9 and record.meta.title == "年假 100%"
    assert record.meta.mtime == 1764540000.123456  # 8-byte floats on both
    table = ledger.chunk_table()
    assert table.ids == ["d1-0", "d1-1"] and table.sections[1] == ("章", "节1")
    assert table.texts[0] == "第0条 用户? 50% 'quoted'" and table.tokens[0] == ["c"]
    ledger.mark_failed(meta("d1"), "broken", "bad zip")
    assert ledger.document("d1").status == "broken" and ledger.chunk_count() == 2  # type: ignore[union-attr]
    assert ledger.delete_document("d1") == ["d1-0", "d1-1"] and ledger.documents() == []
    assert ledger.generation() == 4
    assert ledger.replace_document(meta("d2"), [], []) == [] and ledger.chunk_count() == 0


def test_staging_swap_meta_sources_and_runs(ledger: Ledger) -> None:
    ledger.replace_document(meta("d1"), chunks("d1", 2), [["x"]] * 2)
    ledger.stage_chunks(chunks("d1", 4), [["y"]] * 4)
    generation = ledger.generation()
    ledger.swap_in_staging([(meta("d1"), "ok", "", 4)], "kb_chunks_2", generation)
    assert ledger.chunk_count() == 4 and ledger.get_meta("collection") == "kb_chunks_2"
    with pytest.raises(StoreError, match="changed during the full re-index"):
        ledger.swap_in_staging([], "kb_chunks_3", generation)
    ledger.set_meta("collection", "kb_chunks_5")
    assert ledger.get_meta("collection") == "kb_chunks_5"
    assert ledger.meta_default("cookie", "first") == "first"
    assert ledger.meta_default("cookie", "second") == "first"
    ledger.remember_source("/docs", ["hr"])
    ledger.remember_source("/docs", None)
    assert ledger.sources() == [("/docs", None)]
    first, second = ledger.start_run("ingest", "a"), ledger.start_run("ingest", "b")
    assert second == first + 1
    ledger.record_file(second, "x.pdf", "ingested")
    ledger.finish_run(second, {"ingested": 1})
    assert ledger.last_run()["ingested"] == 1  # type: ignore[index]


def test_users_questions_feedback_and_notes(ledger: Ledger) -> None:
    assert ledger.add_user("bob", "hash", ["all"], False)
    assert not ledger.add_user("bob", "hash2", ["all"], True)
    ledger.set_user_disabled("bob", True)
    user, stored = ledger.user("bob")  # type: ignore[misc]
    assert stored == "hash" and user.disabled and user.epoch == 1 and not user.is_admin
    answer = Answer("5 days [1]", citations=[Citation(1, "a.pdf", 1, "", "5 days", "d1-0")],
                    mode="generated", timings_ms={"total": 3.0})
    q1 = ledger.record_question("bob", "how many days?", answer)
    q2 = ledger.record_question("bob", "and now?", answer)
    assert q2 == q1 + 1 and ledger.question_owner(q1) == "bob"
    f1 = ledger.replace_feedback(q1, "bob", 1, "ok")
    f2 = ledger.replace_feedback(q1, "bob", -1, "no")
    assert f2 > f1 and [(f["user"], f["rating"]) for f in ledger.feedback(10)] == [("bob", -1)]
    assert [r.rating for r in ledger.question_records()] == [-1, None]
    ledger.set_gap_note("k", "see policy", "alice")
    ledger.set_gap_note("k", "see handbook", "carol")
    assert ledger.gap_notes() == {"k": "see handbook"}
    assert ledger.delete_user("bob") and not ledger.delete_user("bob")


def test_sessions_and_login_failures(ledger: Ledger) -> None:
    ledger.open_session("h1", "bob", 0, 100.0, 200.0)
    ledger.open_session("h2", "bob", 0, 250.0, 350.0)  # h1 expired by then: gone
    assert ledger.session("h1") is None and ledger.session("h2") == ("bob", 0, 350.0)
    assert ledger.sessions() == [("h2", "bob")]
    ledger.end_session("h2")
    assert ledger.sessions() == []
    limits = {"u:bob": 2, "a:10.0.0.1": 9}
    assert ledger.reserve_login(limits, "t1", 10.0, 0.0) == {}
    assert ledger.reserve_login(limits, "t2", 20.0, 0.0) == {}
    assert ledger.reserve_login(limits, "t3", 25.0, 0.0) == {"u:bob": 10.0}  # not counted
    assert ledger.login_failures(["u:bob", "u:eve"], 5.0) == {"u:bob": (2, 10.0)}
    assert ledger.reserve_login({"u:eve": 2}, "t4", 30.0, 15.0) == {}  # forgets those at 10.0
    assert ledger.login_failures(["u:bob", "a:10.0.0.1"], 0.0) == {
        "u:bob": (1, 20.0), "a:10.0.0.1": (1, 20.0)}
    ledger.forget_login("t4", "u:bob")  # t4's rows and bob's failures; 10.0.0.1's stay
    assert ledger.login_failures(["u:bob", "u:eve", "a:10.0.0.1"], 0.0) == {
        "a:10.0.0.1": (1, 20.0)}
    ledger.clear_login_failures()
    assert ledger.login_failures(["a:10.0.0.1"], 0.0) == {}


def test_login_reservations_take_turns(ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    """100 threads of two ledgers (two processes) reserve logins for one name at once: the
    check and the count are one step, so exactly the limit get a turn."""
    other = Ledger(ledger_url or tmp_path / "ledger.sqlite")
    granted: list[str] = []
    errors: list[BaseException] = []
    start = threading.Barrier(100)

    def reserve(i: int) -> None:
        try:
            start.wait()
            mine = (ledger, other)[i % 2]
            if not mine.reserve_login({"u:bob": 5}, f"t{i}", 100.0, 0.0):
                granted.append(f"t{i}")
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=reserve, args=(i,)) for i in range(100)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        other.close()
    assert errors == [] and len(granted) == 5
    assert ledger.login_failures(["u:bob"], 0.0) == {"u:bob": (5, 100.0)}


def test_threads_each_get_a_connection(ledger: Ledger) -> None:
    ledger.add_user("bob", "hash", ["all"], False)
    answer = Answer("x", mode="generated")
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            for _ in range(10):
                ledger.record_question("bob", "q", answer)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(ledger.question_records()) == 60


def test_a_second_process_opens_a_migrated_ledger(ledger_url: str, tmp_path: Path) -> None:
    where = ledger_url or tmp_path / "ledger.sqlite"
    first, second = Ledger(where), Ledger(where)
    try:
        names = [r[0] for r in second.db.execute("SELECT name FROM migrations ORDER BY name")]
        assert names == sorted(name for name, _ in MIGRATIONS)
        first.set_meta("x", "1")
        assert second.get_meta("x") == "1"
    finally:
        first.close()
        second.close()


def test_translation() -> None:
    assert to_postgres("SELECT q.user, user FROM questions q WHERE id = ? AND t = '?%'") == (
        "SELECT q.\"user\", \"user\" FROM questions q WHERE id = %s AND t = '?%%'")
    assert to_postgres('SELECT "user", users, user_id FROM x') == (
        'SELECT "user", users, user_id FROM x')
    assert to_postgres("SELECT 1 -- the user's rows?\nFROM t WHERE user = ?") == (
        "SELECT 1 -- the user's rows?\nFROM t WHERE \"user\" = %s")
    assert postgres_ddl("id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL, n INTEGER") == (
        "id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, at DOUBLE PRECISION, n BIGINT")
    assert postgres_ddl("CREATE TABLE s AS SELECT * FROM c WHERE 0") == (
        "CREATE TABLE s AS SELECT * FROM c WHERE false")
    assert redact_url("postgresql://kb:pw@db:5432/kb") == "postgresql://kb@db:5432/kb"


def test_the_url_comes_from_config_or_environment(tmp_path: Path) -> None:
    from core.config import load_settings
    from store.store import open_ledger

    url = "postgresql://kb:pw@db.internal:5432/kb"
    assert load_settings(None, environ={"KB_STORE_LEDGER_URL": url}).store.ledger_url == url
    settings = load_settings(None, environ={}).with_store(tmp_path / "store")
    assert settings.store.ledger_url == ""
    ledger = open_ledger(settings)  # empty: the SQLite file in the store folder
    try:
        assert ledger.dialect == "sqlite" and ledger.path == tmp_path / "store" / "ledger.sqlite"
    finally:
        ledger.close()


def test_bad_urls_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not a PostgreSQL URL"):
        Ledger("mysql://kb@db/kb")
    from devtools.ports import free_port

    url = f"postgresql://kb:secret@127.0.0.1:{free_port()}/kb"
    with pytest.raises(StoreError) as caught:
        Ledger(url)
    message = str(caught.value)
    assert "PostgreSQL refused the connection" in message and "store.ledger_url" in message
    assert "secret" not in message and f"127.0.0.1:{url.rsplit(':', 1)[1]}" in message


def test_a_dropped_postgres_connection_is_replaced(postgres: object) -> None:
    """PostgreSQL restarted or killed our backend: the statement that meets the dead connection
    fails, the thread's next one runs on a new connection."""
    import psycopg

    url = postgres.database("dropped_connection")  # type: ignore[attr-defined]
    ledger, admin = Ledger(url), Ledger(url)
    try:
        ledger.set_meta("x", "1")
        pid = ledger.db.execute("SELECT pg_backend_pid()").fetchone()[0]
        admin.db.execute("SELECT pg_terminate_backend(?)", (pid,))
        with pytest.raises(psycopg.OperationalError):
            ledger.get_meta("x")
        assert ledger.get_meta("x") == "1"
    finally:
        ledger.close()
        admin.close()
