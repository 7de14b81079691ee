"""Images in /v1/chat/completions (issue 30): `geniex serve` on the tiny LFM2-VL (random weights:
gibberish but deterministic text) with its mmproj, through the official `openai` client,
LangChain's ChatOpenAI and raw HTTP; bad images are 400s in OpenAI's error shape and the next
request still works; a text model refuses images with the engine's message."""
from __future__ import annotations

import base64
import pathlib

import openai
import pytest
import requests

from conftest import REPO, start_server

MODELS = REPO / "tests" / "data" / "models"
VISION = REPO / "tests" / "data" / "vision"
VL_MODEL = MODELS / "tiny-lfm2vl-f32.gguf"
VL_MMPROJ = MODELS / "mmproj-tiny-lfm2vl-f32.gguf"
TEXT_MODEL = MODELS / "tiny-lfm2-f32.gguf"


def data_url(path: pathlib.Path, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(path.read_bytes()).decode()


CHELSEA = data_url(VISION / "chelsea.png")


@pytest.fixture(scope="module")
def vl_server(geniex_bin):
    srv = start_server(geniex_bin, VL_MODEL, "--mmproj", VL_MMPROJ, "--allow-image-dir", VISION,
                       "--parallel", "2", "-c", "2048")
    yield srv
    assert srv.stop() == 0


@pytest.fixture(scope="module")
def text_server(geniex_bin):
    # tests/data/models also holds the VL model's mmproj: --no-mmproj skips the discovery.
    srv = start_server(geniex_bin, TEXT_MODEL, "--no-mmproj", "-c", "1024")
    yield srv
    assert srv.stop() == 0


def client(srv) -> openai.OpenAI:
    return openai.OpenAI(base_url=srv.base_url, api_key="unused", max_retries=0)


def image_message(url, text="What is in the image?"):
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}},
                                         {"type": "text", "text": text}]}]


def post(srv, body) -> requests.Response:
    return requests.post(srv.base_url + "/chat/completions", json=body, timeout=60)


def assert_400(r: requests.Response, needle: str):
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["type"] == "invalid_request_error"
    assert needle in err["message"], err
    assert set(err) >= {"message", "type", "param", "code"}


def assert_next_request_works(srv):
    r = post(srv, {"messages": image_message(CHELSEA), "max_tokens": 2, "temperature": 0})
    assert r.status_code == 200, r.text
    assert r.json()["usage"]["completion_tokens"] >= 1


def test_models_and_props_say_vision(vl_server, text_server):
    ids = {m.id: m for m in client(vl_server).models.list().data}
    entry = ids[vl_server.model_id]
    assert entry.object == "model" and entry.owned_by == "geniex"
    assert "vision" in entry.model_dump()["capabilities"]
    text = requests.get(text_server.base_url + "/models", timeout=10).json()["data"][0]
    assert "vision" not in text["capabilities"] and "chat" in text["capabilities"]
    assert requests.get(vl_server.url + "/props", timeout=10).json()["modalities"]["vision"]
    assert not requests.get(text_server.url + "/props", timeout=10).json()["modalities"]["vision"]


def test_openai_client_streams_an_image_reply(vl_server):
    c = client(vl_server)
    stream = c.chat.completions.create(model=vl_server.model_id, messages=image_message(CHELSEA),
                                       max_tokens=6, temperature=0, stream=True,
                                       stream_options={"include_usage": True})
    chunks = list(stream)
    content = [ch for ch in chunks if ch.choices and ch.choices[0].delta.content]
    finishes = [ch.choices[0].finish_reason for ch in chunks if ch.choices and
                ch.choices[0].finish_reason]
    assert content, chunks
    assert finishes == ["length"] or finishes == ["stop"]
    usage = chunks[-1].usage
    # The prompt counts the image's tokens (far more than the text's).
    assert usage.prompt_tokens > 40 and 1 <= usage.completion_tokens <= 6
    # Deterministic: the whole answer equals the streamed one.
    whole = c.chat.completions.create(model=vl_server.model_id, messages=image_message(CHELSEA),
                                      max_tokens=6, temperature=0)
    assert whole.choices[0].message.content == "".join(ch.choices[0].delta.content
                                                       for ch in content)
    assert whole.usage.prompt_tokens == usage.prompt_tokens


def test_string_form_jpeg_and_two_images(vl_server):
    jpg = next(p for p in sorted(VISION.glob("*.jpg")))
    body = {"messages": [{"role": "user", "content": [
        {"type": "text", "text": "Compare"},
        {"type": "image_url", "image_url": data_url(jpg, "image/jpeg")},
        {"type": "image_url", "image_url": {"url": CHELSEA, "detail": "low"}}]}],
        "max_tokens": 2, "temperature": 0}
    r = post(vl_server, body)
    assert r.status_code == 200, r.text
    one = post(vl_server, {"messages": image_message(CHELSEA), "max_tokens": 2, "temperature": 0})
    assert r.json()["usage"]["prompt_tokens"] > one.json()["usage"]["prompt_tokens"]


def test_file_url_inside_the_allowed_directory(vl_server):
    url = (VISION / "chelsea.png").resolve().as_uri()
    a = post(vl_server, {"messages": image_message(url), "max_tokens": 3, "temperature": 0})
    b = post(vl_server, {"messages": image_message(CHELSEA), "max_tokens": 3, "temperature": 0})
    assert a.status_code == 200, a.text
    assert a.json()["choices"][0]["message"]["content"] == b.json()["choices"][0]["message"][
        "content"]


def test_langchain_human_message_with_an_image(vl_server):
    from langchain_core.messages import HumanMessage
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(base_url=vl_server.base_url, api_key="unused", model=vl_server.model_id,
                     max_retries=0, temperature=0, max_tokens=4)
    msg = HumanMessage(content=[{"type": "text", "text": "Describe the image."},
                                {"type": "image_url", "image_url": {"url": CHELSEA}}])
    out = llm.invoke([msg])
    assert isinstance(out.content, str)
    assert out.usage_metadata["input_tokens"] > 40
    assert out.response_metadata["finish_reason"] in ("stop", "length")
    chunks = list(llm.stream([msg]))
    assert "".join(c.content for c in chunks) == out.content


PNG = (VISION / "chelsea.png").read_bytes()


@pytest.mark.parametrize("url,needle", [
    # A PNG cut short: valid base64, undecodable image (the engine's 400).
    ("data:image/png;base64," + base64.b64encode(PNG[:len(PNG) // 3]).decode(), "png"),
    ("data:image/png;base64," + base64.b64encode(b"not an image at all").decode(), "image"),
    ("data:image/png;base64,%%%garbage%%%", "invalid base64"),
    ("data:image/png;base64," + base64.b64encode(PNG[:3000]).decode()[:-1], "invalid base64"),
    ("http://example.com/cat.png", "remote images are not fetched"),
    ("https://example.com/cat.png", "remote images are not fetched"),
    ((MODELS / "tiny-lfm2vl.json").resolve().as_uri(), "outside the allowed image directories"),
    ((VISION / ".." / "models" / "tiny-lfm2vl.json").as_uri(),
     "outside the allowed image directories"),
    ("file:///etc/passwd", "outside the allowed image directories"),
])
def test_bad_images_are_400_and_the_server_goes_on(vl_server, url, needle):
    r = post(vl_server, {"messages": image_message(url), "max_tokens": 2})
    assert_400(r, needle)
    assert_next_request_works(vl_server)


@pytest.mark.parametrize("url", [
    "data:image/png;base64," + base64.b64encode(PNG[:len(PNG) // 3]).decode(),
    "http://example.com/cat.png"])
def test_bad_image_in_a_streamed_request_is_a_plain_400(vl_server, url):
    # The images are encoded before the stream's 200 goes out: an undecodable one is a 400.
    r = requests.post(vl_server.base_url + "/chat/completions", timeout=60, json={
        "messages": image_message(url), "max_tokens": 2, "stream": True})
    assert_400(r, "png" if url.startswith("data:") else "remote images")
    with pytest.raises(openai.BadRequestError):
        list(client(vl_server).chat.completions.create(
            model=vl_server.model_id, messages=image_message(url), max_tokens=2, stream=True))
    assert_next_request_works(vl_server)


def test_streams_in_parallel_and_a_client_that_leaves(vl_server):
    import concurrent.futures

    def one(i):
        stream = client(vl_server).chat.completions.create(
            model=vl_server.model_id, messages=image_message(CHELSEA, f"Image {i}?"),
            max_tokens=4, temperature=0, stream=True)
        return [ch.choices[0].finish_reason for ch in stream if ch.choices]

    with concurrent.futures.ThreadPoolExecutor(4) as ex:
        for finishes in ex.map(one, range(4)):
            assert finishes[-1] in ("length", "stop")
    # A client that closes the stream after the first chunk: the server cancels and goes on.
    with requests.post(vl_server.base_url + "/chat/completions", stream=True, timeout=60, json={
            "messages": image_message(CHELSEA), "max_tokens": 200, "stream": True,
            "temperature": 0}) as r:
        assert r.status_code == 200
        next(r.iter_lines())
    vl_server.wait_idle()
    assert_next_request_works(vl_server)


def test_bad_image_through_the_openai_client(vl_server):
    with pytest.raises(openai.BadRequestError) as e:
        client(vl_server).chat.completions.create(
            model=vl_server.model_id, messages=image_message("http://example.com/x.png"),
            max_tokens=2)
    assert "data: URL" in str(e.value)
    assert_next_request_works(vl_server)


def test_too_many_images_is_400(vl_server):
    parts = [{"type": "image_url", "image_url": {"url": CHELSEA}}] * 9
    r = post(vl_server, {"messages": [{"role": "user", "content": parts}], "max_tokens": 2})
    assert_400(r, "at most 8 images")
    assert r.json()["error"]["param"] == "messages[0].content[8]"
    assert_next_request_works(vl_server)


def test_a_two_megabyte_image_fits_the_body_limit(vl_server):
    # ~2 MiB of image bytes (2.7 MiB as base64) is under the default 4 MiB body limit: the
    # request reaches the decoder (a PNG followed by padding after its IEND chunk), not a 413.
    blob = PNG * (2 * 1024 * 1024 // len(PNG) + 1)
    r = post(vl_server, {"messages": image_message("data:image/png;base64," +
                                                   base64.b64encode(blob).decode()),
                         "max_tokens": 2})
    assert r.status_code == 200, r.text[:300]
    assert_next_request_works(vl_server)


def test_text_model_refuses_images(text_server):
    r = post(text_server, {"messages": image_message(CHELSEA), "max_tokens": 2})
    assert_400(r, "takes no images")
    with pytest.raises(openai.BadRequestError):
        client(text_server).chat.completions.create(
            model=text_server.model_id, messages=image_message(CHELSEA), max_tokens=2)
    ok = post(text_server, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    assert ok.status_code == 200, ok.text


def test_mmproj_discovery_and_no_mmproj(geniex_bin, tmp_path):
    # The one mmproj-*.gguf beside the model is used (and logged); --no-mmproj turns it off.
    (tmp_path / VL_MODEL.name).symlink_to(VL_MODEL)
    (tmp_path / VL_MMPROJ.name).symlink_to(VL_MMPROJ)
    srv = start_server(geniex_bin, tmp_path / VL_MODEL.name, "-c", "1024")
    try:
        caps = requests.get(srv.base_url + "/models", timeout=10).json()["data"][0]["capabilities"]
        assert "vision" in caps
    finally:
        srv.stop()
    assert any("mmproj-tiny-lfm2vl-f32.gguf" in line and "found beside the model" in line
               for line in srv.stderr_lines())
    srv = start_server(geniex_bin, tmp_path / VL_MODEL.name, "--no-mmproj", "-c", "1024")
    try:
        caps = requests.get(srv.base_url + "/models", timeout=10).json()["data"][0]["capabilities"]
        assert "vision" not in caps
        assert_400(post(srv, {"messages": image_message(CHELSEA), "max_tokens": 2}),
                   "takes no images")
    finally:
        srv.stop()


def test_more_image_tokens_than_the_context_is_400(geniex_bin):
    srv = start_server(geniex_bin, VL_MODEL, "--mmproj", VL_MMPROJ, "-c", "64")
    try:
        for stream in (False, True):
            r = post(srv, {"messages": image_message(CHELSEA), "max_tokens": 2, "stream": stream})
            assert_400(r, "image tokens")
        ok = post(srv, {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
        assert ok.status_code == 200, ok.text
    finally:
        assert srv.stop() == 0
