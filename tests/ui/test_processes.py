"""Two real `kb serve` processes on loopback sharing one store (issue 13): the SQLite ledger in
the store folder, one real Chroma server, the model unreachable. A login made through one works
on the other and a logout through the other ends it; a document an admin uploads through one is
answerable through the other within the refresh delay."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.config import load_settings
from devtools.app_processes import REPO, passages, running_apps, shared_env, wait_for_file
from ui.wiring import users_for

pytestmark = pytest.mark.slow

PASSWORDS = {"alice": "alice-password", "bob": "bob-password"}
QUESTION = "How many quibbit vouchers does each employee get per year?"
REFRESH_S = 0.5


def test_two_app_processes_share_logins_and_documents(
    tmp_path: Path, chroma_server: Any, embed_cache: Path
) -> None:
    import docx
    from gradio_client import Client, handle_file

    store = tmp_path / "store"
    env = shared_env(chroma_server.host, chroma_server.port, "twoapps", embed_cache, REFRESH_S)
    settings = load_settings(REPO / "config.toml", environ=env).with_store(store)
    settings = dataclasses.replace(settings, base_dir=REPO)
    with users_for(settings) as users:
        users.add("alice", PASSWORDS["alice"], ["all"], is_admin=True)
        users.add("bob", PASSWORDS["bob"], ["all"])
        token = users.new_token("bob")
    document = tmp_path / "Quibbit-Voucher-Policy.docx"
    doc = docx.Document()
    doc.add_heading("Quibbit Voucher Policy", level=1)
    doc.add_paragraph("Each employee receives 7 quibbit vouchers per year, redeemable at the "
                      "staff canteen.")
    doc.save(str(document))

    with running_apps(store, env, count=2, logs=tmp_path) as (first, second):
        # a login through the first process is a login on the second
        with httpx.Client(base_url=first.url, timeout=30) as one:
            assert one.post("login", data={"username": "bob", "password": PASSWORDS["bob"]}
                            ).status_code == 200
            assert one.get("config").status_code == 200
            with httpx.Client(base_url=second.url, timeout=30, cookies=one.cookies) as two:
                assert two.get("config").status_code == 200
                assert two.get("gradio_api/login_check").status_code == 200
                two.get("logout")  # Gradio's logout through the second ends it on the first
            assert one.get("config").status_code == 401

        # failed logins through one process count on the other (lockout after 5 by default),
        # under the socket's address: kb serve believes X-Forwarded-For from no one by default
        codes = [httpx.post((first if i % 2 else second).url + "login", timeout=30,
                            data={"username": "alice", "password": f"guess-{i}"},
                            headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code
                 for i in range(6)]
        assert codes == [400] * 5 + [429], codes
        with users_for(settings) as users:
            counted = users.ledger.login_failures(["a:127.0.0.1", "a:203.0.113.0"], 0.0)
        assert set(counted) == {"a:127.0.0.1"} and counted["a:127.0.0.1"][0] == 5, counted

        # a document uploaded through the first is answerable through the second
        assert not any(f.endswith("Quibbit-Voucher-Policy.docx")
                       for f in passages(second, token, QUESTION))
        admin = Client(first.url, auth=("bob", PASSWORDS["bob"]), verbose=False,
                       download_files=False)
        with pytest.raises(Exception, match="403|Administrators only"):  # bob is no admin
            admin.predict([handle_file(str(document))], ["all"], api_name="/ingest")
        with users_for(settings) as users:  # alice's lockout ends, as an admin would do it
            users.ledger.clear_login_failures()
        admin = Client(first.url, auth=("alice", PASSWORDS["alice"]), verbose=False,
                       download_files=False)
        report, *_ = admin.predict([handle_file(str(document))], ["all"], api_name="/ingest")
        assert {r[0]: r[1] for r in report["data"]}["Quibbit-Voucher-Policy.docx"] == "ingested"
        assert wait_for_file(first, token, QUESTION, "Quibbit-Voucher-Policy.docx", 1.0) < 1.0
        delay = wait_for_file(second, token, QUESTION, "Quibbit-Voucher-Policy.docx", 30.0)
        print(f"the second process answered with the new document after {delay:.2f} s")
        assert delay < REFRESH_S + 10.0  # the refresh period plus a rebuild on a busy CI box
        # /metrics says which generation each process answers from, and the ledger's
        text = httpx.get(second.url + "metrics", timeout=30).text
        gauges = {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
                  if line.startswith(("kb_snapshot_generation", "kb_ledger_generation"))}
        assert gauges["kb_snapshot_generation"] == gauges["kb_ledger_generation"] > 0, gauges
