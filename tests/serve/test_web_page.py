"""The web page served by ``ragline serve``, driven in a real headless Chromium.

A real server over a real index (PostgreSQL, MiniLM, the example documents): sign in with
an admin key, ask (streamed answer, clickable citation, passage panel, Escape), an
unanswerable question (the abstention state), search only, upload a file with hostile
HTML (shown as text, never run), delete it, the trace view and the documents list.
Screenshots go to ``$RAGLINE_TEST_OUTPUT/web`` (default ``test-output/web``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import EXAMPLES, REPO, make_index
from tests.serve.harness import live_server

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
BATTERY = "How long does the X-570 battery last on a full charge?"
MANUAL = "X-570 Warehouse Robot User Manual"
HOSTILE = (
    'Quarantine notice <img src=x onerror="window.__pwned=1">'
    "<script>window.__pwned=2</script>\n\n"
    "The zanzibar flamingo protocol requires every flamingo to be counted at dawn "
    "by two wardens. <b>bold</b> &amp; <a href=javascript:alert(1)>link</a>\n"
)

pytestmark = pytest.mark.slow


def output_dir() -> Path:
    out = REPO / os.environ.get("RAGLINE_TEST_OUTPUT", "test-output") / "web"
    out.mkdir(parents=True, exist_ok=True)
    return out


@pytest.fixture()
def browser() -> Iterator[Any]:
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        pytest.skip(
            f"{', '.join(missing)} not found: install the browser with "
            "'apt-get install chromium chromium-driver'"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="pip install -e '.[test]'")
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # Selenium Manager must never try to download
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1366,900",
        "--disable-gpu",
        "--no-first-run",
        "--disable-extensions",
        "--lang=en-US",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def test_web_page(browser, pg_url, schema, minilm, tmp_path):
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from ragline.store.keys import create_key

    index = make_index(pg_url, schema, embedder=minilm)
    try:
        report = index.ingest(EXAMPLES, tenant="acme")
        assert not report.failed
        key, _ = create_key(index.db, tenant="acme", admin=True)
        out = output_dir()
        d = browser
        wait = WebDriverWait(d, 30, poll_frequency=0.1)

        def visible(css: str) -> Any:
            return wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, css)))

        def shot(name: str) -> Path:
            path = out / f"{name}.png"
            assert d.save_screenshot(str(path)), f"could not save {path}"
            assert path.stat().st_size > 1000, f"{path} is empty"
            return path

        def ask(question: str, *, search: bool = False) -> Any:
            box = visible("#ask-input")
            mode = d.find_element(
                By.CSS_SELECTOR, f"input[name=mode][value={'search' if search else 'ask'}]"
            )
            mode.click()
            box.clear()
            box.send_keys(question)
            box.send_keys(Keys.ENTER)  # Enter submits; Shift+Enter would be a new line
            wait.until(
                lambda _: (
                    d.find_element(By.ID, "answer-question").text == question
                    and d.find_element(By.ID, "answer").get_attribute("data-state")
                    in ("done", "abstained", "error")
                )
            )
            return d.find_element(By.ID, "answer")

        with live_server(index, upload_dir=tmp_path / "uploads") as live:
            # -- the page works under its Content-Security-Policy (no script errors below)
            import httpx

            csp = httpx.get(live.url + "/").headers["content-security-policy"]
            assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
            # -- sign in: a wrong key is refused, the admin key is accepted ---------------
            d.get(live.url + "/")
            field = visible("#key-input")
            shot("sign-in")
            field.send_keys("rl_not-a-real-key", Keys.ENTER)
            assert "refused" in visible("#key-error").text
            field.clear()
            field.send_keys(key, Keys.ENTER)
            visible("#view-ask")
            who = visible("#who").text
            assert "acme" in who and "admin" in who

            # -- a cited answer ------------------------------------------------------------
            answer = ask(BATTERY)
            assert answer.get_attribute("data-state") == "done"
            body = d.find_element(By.ID, "answer-body")
            assert body.get_attribute("aria-live") == "polite"
            assert body.get_attribute("aria-busy") == "false"
            assert "10 hours" in body.text
            cite = body.find_element(By.CSS_SELECTOR, 'button.cite[data-cite="1"]')
            assert MANUAL in cite.get_attribute("aria-label")
            sources = d.find_element(By.CSS_SELECTOR, "#answer-extra .source-list")
            assert MANUAL in sources.text
            cite.click()
            panel = visible("#passage-panel")
            assert MANUAL in d.find_element(By.ID, "passage-title").text
            assert "Charging" in d.find_element(By.ID, "passage-path").text
            passage = d.find_element(By.ID, "passage-text")
            assert "10 hours of continuous operation" in passage.text
            mark = passage.find_element(By.TAG_NAME, "mark")
            assert "10 hours" in mark.text  # the quoted sentence is highlighted
            meta = d.find_element(By.ID, "passage-meta").text
            assert "Score" in meta and "x570-user-manual.md" in meta
            shot("answer-passage")
            d.switch_to.active_element.send_keys(Keys.ESCAPE)
            wait.until(ec.invisibility_of_element(panel))
            assert d.switch_to.active_element.get_attribute("data-cite") == "1"  # focus back
            trace_href = d.find_element(By.CSS_SELECTOR, "#answer-extra a.trace-link")
            trace_href = trace_href.get_attribute("href")
            assert "#trace/tr_" in trace_href

            # -- the abstention state ------------------------------------------------------
            answer = ask("What is the capital of Mongolia?")
            assert answer.get_attribute("data-state") == "abstained"
            state = answer.find_element(By.CSS_SELECTOR, ".abstained")
            assert "The sources do not answer this question" in state.text
            assert not answer.find_elements(By.CSS_SELECTOR, "button.cite")
            past = d.find_element(By.CSS_SELECTOR, "#history .past")
            assert "10 hours" in past.text  # the earlier answer stays, below
            shot("abstained")

            # -- upload a hostile file, search it, read it as text, delete it ----------------
            hostile = tmp_path / "hostile-notice.txt"
            hostile.write_text(HOSTILE, encoding="utf-8")
            d.find_element(By.CSS_SELECTOR, '#nav a[data-view="documents"]').click()
            visible("#upload-form")
            d.find_element(By.ID, "upload-files").send_keys(str(hostile))
            d.find_element(By.ID, "upload-submit").click()
            report = visible('#upload-status .job-report[data-job="done"]')
            assert "1 added" in report.text and "0 failed" in report.text
            table = visible("#docs-table")
            wait.until(lambda _: "upload:hostile-notice.txt" in table.text)

            d.find_element(By.CSS_SELECTOR, '#nav a[data-view="ask"]').click()
            ask("zanzibar flamingo protocol", search=True)
            first = visible("#answer-body .hit button.source-link")
            first.click()
            passage = visible("#passage-text")
            assert 'onerror="window.__pwned=1"' in passage.text  # shown as text
            assert "<script>" in passage.text
            panel_el = d.find_element(By.ID, "passage-panel")
            assert not panel_el.find_elements(
                By.CSS_SELECTOR, "img, script, b, a[href^=javascript]"
            )
            assert d.execute_script("return window.__pwned === undefined")
            shot("search-hostile")
            d.find_element(By.ID, "passage-close").click()

            d.find_element(By.CSS_SELECTOR, '#nav a[data-view="documents"]').click()

            def click_in_row(label: str) -> None:
                # the list re-renders when its fetch completes: find the row afresh on a retry
                for _ in range(20):
                    try:
                        row = visible("#docs-table").find_element(
                            By.XPATH, ".//tr[td[contains(., 'upload:hostile-notice.txt')]]"
                        )
                        row.find_element(
                            By.XPATH, f".//button[normalize-space()='{label}']"
                        ).click()
                        return
                    except (StaleElementReferenceException, NoSuchElementException):
                        time.sleep(0.1)
                raise AssertionError(f"no {label!r} button in the hostile document's row")

            click_in_row("Delete")
            click_in_row("Confirm delete")
            wait.until(
                lambda _: "upload:hostile-notice.txt" not in d.find_element(By.ID, "docs-list").text
            )
            table = visible("#docs-table")
            assert MANUAL in table.text
            assert len(table.find_elements(By.CSS_SELECTOR, "tbody tr")) == 6
            assert "Deleted" in d.find_element(By.ID, "docs-list").text
            shot("documents")

            # -- the trace of the first answer ---------------------------------------------
            d.get(trace_href)
            trace = visible("#trace")
            assert BATTERY in trace.find_element(By.ID, "trace-heading").text
            legs = trace.find_element(By.ID, "trace-legs")
            for leg in ("bm25", "vector", "fused (RRF)"):
                col = legs.find_element(By.CSS_SELECTOR, f'[data-leg="{leg}"]')
                assert col.find_elements(By.CSS_SELECTOR, "tbody tr"), f"no {leg} candidates"
            assert legs.find_elements(By.CSS_SELECTOR, "tr.in-hits")
            assert "x-570" in trace.find_element(By.ID, "trace-bm25-query").text
            stages = {
                e.get_attribute("data-stage")
                for e in trace.find_elements(By.CSS_SELECTOR, "#trace-timings .timing")
            }
            assert {"bm25", "vector", "generate"} <= stages
            assert trace.find_elements(By.CSS_SELECTOR, "#trace-hits tbody tr")
            assert (
                "tokens"
                in trace.find_element(By.ID, "trace-context").find_element(By.XPATH, "..").text
            )
            assert "10 hours" in trace.text  # the generation section
            visible("#traces-table")
            shot("trace")
            d.execute_script("document.getElementById('trace-hits').scrollIntoView()")
            shot("trace-hits-context")

            # -- change key: a reader key sees documents but no upload or delete ------------
            reader, _ = create_key(index.db, tenant="acme", groups=["staff"])
            d.find_element(By.ID, "sign-out").click()
            field = visible("#key-input")
            field.send_keys(reader, Keys.ENTER)
            wait.until(lambda _: "reader" in d.find_element(By.ID, "who").text)
            d.find_element(By.CSS_SELECTOR, '#nav a[data-view="documents"]').click()
            visible("#docs-readonly")
            assert MANUAL in visible("#docs-table").text
            assert not d.find_element(By.ID, "upload-form").is_displayed()
            assert not d.find_elements(By.XPATH, "//button[normalize-space()='Delete']")

            # -- no script errors on the way (a missing favicon is not one) ------------------
            errors = [
                e["message"]
                for e in d.get_log("browser")
                if e["level"] == "SEVERE"
                and "favicon" not in e["message"]
                and "/v1/me" not in e["message"]  # the refused key above
            ]
            assert not errors, errors
    finally:
        index.close()
