#include "server/chat_page.h"

namespace geniex::server {
namespace {

// Element ids (#messages, #input, #send, #stop, #status, #model, #key, #max, #temp, #system)
// are what tests/python/test_serve_chat_page.py drives; keep them stable.
constexpr std::string_view kPage = R"GENIEX_PAGE(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GenieX chat</title>
<style>
  body { font: 15px/1.45 system-ui, sans-serif; margin: 0; display: flex; flex-direction: column;
         height: 100vh; background: #f6f6f4; color: #222; }
  header { padding: 8px 16px; background: #1f2937; color: #eee; display: flex; gap: 12px;
           align-items: center; }
  header b { margin-right: auto; }
  header input { width: 160px; }
  #settings { padding: 6px 16px; background: #e5e7eb; display: flex; gap: 12px;
              align-items: center; font-size: 13px; }
  #settings label:first-child { flex: 1; display: flex; gap: 6px; align-items: center; }
  #system { flex: 1; font: inherit; }
  #messages { flex: 1; overflow-y: auto; padding: 16px; }
  .msg { max-width: 760px; margin: 0 auto 12px; padding: 10px 14px; border-radius: 10px;
         white-space: pre-wrap; word-wrap: break-word; }
  .user { background: #dbeafe; }
  .assistant { background: #fff; border: 1px solid #ddd; }
  .error { background: #fee2e2; }
  form { display: flex; gap: 8px; padding: 12px 16px; background: #fff; border-top: 1px solid #ddd; }
  textarea { flex: 1; font: inherit; resize: none; height: 3em; padding: 6px; }
  #status { font-size: 12px; color: #9ca3af; }
</style>
</head>
<body>
<header><b>GenieX</b><span id="model">…</span>
  <label>API key <input id="key" type="password" autocomplete="off"></label>
  <button id="reset" type="button">New chat</button></header>
<div id="settings">
  <label>system prompt <input id="system" type="text" placeholder="(none)"></label>
  <label>temperature <input id="temp" type="number" min="0" max="2" step="0.1"
    placeholder="server" style="width: 64px"></label>
  <label>max tokens <input id="max" type="number" value="512" min="1" style="width: 64px"></label>
</div>
<div id="messages"></div>
<form id="form">
  <textarea id="input" placeholder="Message (Enter sends, Shift+Enter new line)"></textarea>
  <button id="send" type="submit">Send</button>
  <button id="stop" type="button" disabled>Stop</button>
</form>
<div id="status" style="padding: 0 16px 6px">idle</div>
<script>
"use strict";
const $ = (id) => document.getElementById(id);
const history = [];
let model = null;
let controller = null;  // aborts the streaming request (Stop)
$("key").value = localStorage.getItem("geniex-key") || "";
$("key").onchange = () => localStorage.setItem("geniex-key", $("key").value);
for (const id of ["system", "temp", "max"]) {
  const saved = localStorage.getItem("geniex-" + id);
  if (saved !== null) $(id).value = saved;
  $(id).onchange = () => localStorage.setItem("geniex-" + id, $(id).value);
}

function headers() {
  const h = { "Content-Type": "application/json" };
  if ($("key").value) h["Authorization"] = "Bearer " + $("key").value;
  return h;
}

function bubble(cls, text) {
  const d = document.createElement("div");
  d.className = "msg " + cls;
  d.textContent = text;
  $("messages").appendChild(d);
  $("messages").scrollTop = $("messages").scrollHeight;
  return d;
}

async function loadModel() {
  try {
    const r = await fetch("/v1/models", { headers: headers() });
    const j = await r.json();
    if (!r.ok) throw new Error(j.error ? j.error.message : r.status);
    model = j.data[0].id;
    $("model").textContent = model;
  } catch (e) {
    $("model").textContent = "model unavailable: " + e.message;
  }
  try {  // the server's default temperature as the field's hint
    const r = await fetch("/props", { headers: headers() });
    if (r.ok) {
      const d = (await r.json()).default_generation_settings;
      $("temp").placeholder = "server: " + d.temperature;
    }
  } catch (e) { /* the hint is optional */ }
}

/// The request body: the system prompt (if any) before the turns, and the settings fields.
function requestBody() {
  const system = $("system").value.trim();
  const messages = system ? [{ role: "system", content: system }, ...history] : [...history];
  const body = { model, messages, stream: true, max_tokens: Number($("max").value) || 512 };
  const temp = $("temp").value.trim();
  if (temp !== "" && !Number.isNaN(Number(temp))) body.temperature = Number(temp);
  return body;
}

async function send(text) {
  if (!model) await loadModel();
  history.push({ role: "user", content: text });
  bubble("user", text);
  const out = bubble("assistant", "");
  $("send").disabled = true;
  $("stop").disabled = false;
  $("status").textContent = "generating";
  controller = new AbortController();
  let reply = "";
  try {
    const r = await fetch("/v1/chat/completions", {
      method: "POST", headers: headers(), body: JSON.stringify(requestBody()),
      signal: controller.signal,
    });
    if (!r.ok) {
      const j = await r.json().catch(() => ({}));
      throw new Error(j.error ? j.error.message : "HTTP " + r.status);
    }
    const reader = r.body.getReader();
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf("\n\n")) >= 0) {
        const event = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        if (!event.startsWith("data: ")) continue;
        const data = event.slice(6);
        if (data === "[DONE]") continue;
        const j = JSON.parse(data);
        if (j.error) throw new Error(j.error.message);
        const delta = j.choices.length ? j.choices[0].delta : {};
        if (delta.content) {
          reply += delta.content;
          out.textContent = reply;
          $("messages").scrollTop = $("messages").scrollHeight;
        }
      }
    }
    history.push({ role: "assistant", content: reply });
    $("status").textContent = "done";
  } catch (e) {
    if (e.name === "AbortError") {  // Stop: keep what came so far (closing the stream cancels it)
      history.push({ role: "assistant", content: reply });
      $("status").textContent = "stopped";
    } else {
      out.className = "msg error";
      out.textContent = (reply ? reply + "\n" : "") + "Error: " + e.message;
      history.pop();
      $("status").textContent = "error";
    }
  } finally {
    controller = null;
    $("send").disabled = false;
    $("stop").disabled = true;
  }
}

$("stop").onclick = () => { if (controller) controller.abort(); };

$("form").onsubmit = (ev) => {
  ev.preventDefault();
  const text = $("input").value.trim();
  if (!text || $("send").disabled) return;
  $("input").value = "";
  send(text);
};
$("input").onkeydown = (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); $("form").requestSubmit(); }
};
$("reset").onclick = () => { history.length = 0; $("messages").innerHTML = ""; };
loadModel();
</script>
</body>
</html>
)GENIEX_PAGE";

}  // namespace

std::string_view chat_page_html() { return kPage; }

}  // namespace geniex::server
