"""The chat page at / in headless Chromium (Debian's chromium + chromium-driver, PyPI selenium):
type a message, see the reply stream in."""
from __future__ import annotations

import shutil

import pytest
import requests

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM or not CHROMEDRIVER:
        pytest.fail("chromium / chromedriver not found: install them with scripts/setup.sh "
                    "(Debian packages chromium and chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1000,800"):
        opts.add_argument(a)
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    yield drv
    drv.quit()


def test_page_is_self_contained_html(gemma_server):
    r = requests.get(gemma_server.url + "/", timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/html")
    assert "<script" in r.text and "http://" not in r.text and "https://" not in r.text


def test_type_a_message_and_see_the_reply_stream(gemma_server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(gemma_server.url + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(ec.text_to_be_present_in_element((By.ID, "model"), gemma_server.model_id))
    mx = browser.find_element(By.ID, "max")
    mx.clear()
    mx.send_keys("24")
    # Count how often the reply bubble changes: streaming updates it once per chunk.
    browser.execute_script("""
        window.__updates = 0;
        new MutationObserver(() => window.__updates++).observe(
            document.getElementById('messages'), {subtree: true, childList: true, characterData: true});
    """)
    box = browser.find_element(By.ID, "input")
    box.send_keys("Name three colors.")
    browser.find_element(By.ID, "send").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "done"))
    user = browser.find_elements(By.CSS_SELECTOR, ".msg.user")
    reply = browser.find_elements(By.CSS_SELECTOR, ".msg.assistant")
    assert [u.text for u in user] == ["Name three colors."]
    assert len(reply) == 1 and reply[0].text.strip()
    assert browser.execute_script("return window.__updates") > 3, "reply did not stream in pieces"
    browser.save_screenshot(str(tmp_path / "chat_page.png"))
