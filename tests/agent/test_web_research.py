"""The web page's Research mode in a real headless Chromium: the answer comes from the
research loop and its trace shows the steps."""

from __future__ import annotations

from typing import Any

import pytest

from tests.agent.test_faces import TWO_PART
from tests.conftest import EXAMPLES, make_index
from tests.serve.harness import live_server
from tests.serve.test_web_page import browser  # noqa: F401  (the fixture)

pytestmark = pytest.mark.slow


def test_research_mode_and_its_trace(browser, pg_url, schema, minilm, tmp_path):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from ragline.store.keys import create_key

    index = make_index(pg_url, schema, embedder=minilm)
    try:
        index.ingest(EXAMPLES)
        key, _ = create_key(index.db, tenant="default")
        d = browser
        wait = WebDriverWait(d, 60, poll_frequency=0.1)

        def visible(css: str) -> Any:
            return wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, css)))

        with live_server(index, upload_dir=tmp_path / "uploads") as live:
            d.get(live.url + "/")
            visible("#key-input").send_keys(key, Keys.ENTER)
            visible("#view-ask")
            d.find_element(By.CSS_SELECTOR, "input[name=mode][value=research]").click()
            assert d.find_element(By.ID, "ask-submit").text == "Research"
            box = visible("#ask-input")
            box.send_keys(TWO_PART, Keys.ENTER)
            wait.until(
                lambda _: (
                    d.find_element(By.ID, "answer").get_attribute("data-state")
                    in ("done", "abstained", "error")
                )
            )
            assert d.find_element(By.ID, "answer").get_attribute("data-state") == "done"
            assert "10 hours" in d.find_element(By.ID, "answer-body").text
            d.find_element(By.CSS_SELECTOR, "#answer-extra a.trace-link").click()
            steps = visible("#trace-agent")
            kinds = [
                li.get_attribute("data-kind")
                for li in steps.find_elements(By.CSS_SELECTOR, "ol.agent-steps > li")
            ]
            assert kinds[0] == "plan" and "search" in kinds and kinds[-1] == "synthesize"
            assert "stop: enough" in steps.text and "judge (heuristic)" in steps.text
            errors = [e for e in d.get_log("browser") if e["level"] == "SEVERE"]
            assert not errors, errors
    finally:
        index.close()
