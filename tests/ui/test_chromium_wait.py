"""The browser tests' `wait_for` in real Chromium: a page that navigates while its expression
is evaluated is waited for, not failed on."""

from __future__ import annotations

from devtools.chromium import Page

ARRIVED = "about:blank#arrived"


def test_an_evaluation_a_navigation_cuts_short_counts_as_not_yet(browser: Page) -> None:
    browser.send("Page.enable")
    browser.send("Page.navigate", url="data:text/html,<p>leaving</p>")
    browser.wait_for("!!document.body")
    # the first evaluation leaves the page and never settles: Chromium answers it with an error
    found = browser.wait_for(
        f"location.href === '{ARRIVED}' ? location.href"
        f" : new Promise(() => {{ location.href = '{ARRIVED}'; }})", timeout=30)
    assert found == ARRIVED
