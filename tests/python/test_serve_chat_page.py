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


def test_settings_are_sent_with_each_request(gemma_server, browser):
    """The system prompt, temperature and max tokens fields go into every request body."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(gemma_server.url + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(ec.text_to_be_present_in_element((By.ID, "model"), gemma_server.model_id))
    # The temperature hint is the server's default (GET /props).
    wait.until(lambda d: d.find_element(By.ID, "temp").get_attribute("placeholder") == "server: 0.8")
    browser.execute_script("""
        window.__bodies = [];
        const f = window.fetch;
        window.fetch = (url, opts) => {
          if (String(url).endsWith("/v1/chat/completions")) window.__bodies.push(JSON.parse(opts.body));
          return f(url, opts);
        };
    """)
    for field, value in (("system", "Answer in one word."), ("temp", "0"), ("max", "6")):
        el = browser.find_element(By.ID, field)
        el.clear()
        el.send_keys(value)
    for turn, text in enumerate(["Name a color.", "Another one."]):
        browser.find_element(By.ID, "input").send_keys(text)
        browser.find_element(By.ID, "send").click()
        wait.until(lambda d, n=turn + 1: d.execute_script("return window.__bodies.length") == n
                   and d.find_element(By.ID, "status").text == "done")
    bodies = browser.execute_script("return window.__bodies")
    for b in bodies:
        assert b["messages"][0] == {"role": "system", "content": "Answer in one word."}
        assert b["temperature"] == 0 and b["max_tokens"] == 6 and b["stream"] is True
    assert [m["role"] for m in bodies[1]["messages"]] == ["system", "user", "assistant", "user"]
    browser.execute_script("localStorage.clear()")


@pytest.fixture(scope="module")
def endless_server(geniex_bin, gemma_gguf):
    """A server whose replies never end early (--ignore-eos): only Stop ends one quickly."""
    from conftest import start_server

    srv = start_server(geniex_bin, gemma_gguf, "--ignore-eos", "--parallel", "1",
                       "--no-access-log")
    yield srv
    srv.stop()


def test_stop_button_cancels_the_generation(endless_server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(endless_server.url + "/")
    wait = WebDriverWait(browser, 60)
    wait.until(ec.text_to_be_present_in_element((By.ID, "model"), endless_server.model_id))
    stop = browser.find_element(By.ID, "stop")
    assert not stop.is_enabled()
    mx = browser.find_element(By.ID, "max")
    mx.clear()
    mx.send_keys("3000")  # minutes of generation on this machine if nothing stops it
    browser.find_element(By.ID, "input").send_keys("Count to a thousand.")
    browser.find_element(By.ID, "send").click()
    wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".msg.assistant").text.strip())
    assert stop.is_enabled()
    stop.click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "status"), "stopped"))
    assert not stop.is_enabled() and browser.find_element(By.ID, "send").is_enabled()
    assert browser.find_element(By.CSS_SELECTOR, ".msg.assistant").text.strip()  # kept
    # The aborted stream cancelled the generation on the server: its slot is free again.
    m = endless_server.wait_idle(timeout=10)
    assert m["geniex_requests_in_flight"] == 0
    browser.execute_script("localStorage.clear()")
