// The specdec chat page: streams a chat completion and colours each piece of text by where its token came
// from (an accepted draft token, the target's resampled token after a rejection, the bonus token after a
// fully accepted draft, or a plain target step), with the request's live speculative statistics.
"use strict";

const $ = (id) => document.getElementById(id);
const messages = [];
let model = null;

async function loadModel() {
  const response = await fetch("/v1/models", { headers: headers() });
  if (response.ok) {
    model = (await response.json()).data[0].id;
    $("model").textContent = model;
  }
}

function headers() {
  const key = $("api-key").value;
  return Object.assign({ "Content-Type": "application/json" }, key ? { Authorization: "Bearer " + key } : {});
}

function turn(role, text) {
  const div = document.createElement("div");
  div.className = "turn " + role;
  div.textContent = text || "";
  $("conversation").appendChild(div);
  return div;
}

function showStats(counts, started) {
  const seconds = (performance.now() - started) / 1000;
  $("acceptance").textContent = counts.drafted ? (100 * counts.accepted / counts.drafted).toFixed(0) + " %" : "–";
  $("per-call").textContent = counts.calls ? (counts.tokens / counts.calls).toFixed(2) : "–";
  $("speed").textContent = seconds > 0 ? (counts.tokens / seconds).toFixed(1) : "–";
}

// One SSE event: a chunk of the stream. specdec's extension gives the chunk's text as [text, provenance]
// pieces and the counts of the steps behind it (tokens, draft tokens verified and accepted).
function onChunk(chunk, out, counts, started) {
  if (chunk.error) throw new Error(chunk.error.message);
  const ours = chunk.specdec;
  if (!ours) return;
  for (const [text, kind] of ours.pieces) {
    const span = document.createElement("span");
    span.className = kind;
    span.textContent = text;
    out.appendChild(span);
  }
  counts.calls += ours.steps;
  counts.tokens += ours.tokens;
  counts.drafted += ours.drafted;
  counts.accepted += ours.accepted;
  showStats(counts, started);
}

async function ask(event) {
  event.preventDefault();
  const prompt = $("prompt").value.trim();
  if (!prompt) return;
  messages.push({ role: "user", content: prompt });
  turn("user", prompt);
  $("prompt").value = "";
  $("send").disabled = true;
  const out = turn("assistant");
  const counts = { calls: 0, tokens: 0, accepted: 0, drafted: 0 };
  const started = performance.now();
  const body = {
    model, messages, stream: true, stream_options: { include_usage: true },
    max_tokens: Number($("max-tokens").value), temperature: Number($("temperature").value),
    speculative: { method: $("speculate").checked ? "server" : "off" },
  };
  try {
    const response = await fetch("/v1/chat/completions", { method: "POST", headers: headers(), body: JSON.stringify(body) });
    if (!response.ok) throw new Error((await response.json()).error.message);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      const events = buffer.split("\n\n");
      buffer = events.pop();
      for (const event of events) {
        const data = event.replace(/^data: /, "");
        if (data !== "[DONE]") onChunk(JSON.parse(data), out, counts, started);
      }
    }
    messages.push({ role: "assistant", content: out.textContent });
  } catch (err) {
    out.className = "turn error";
    out.textContent = String(err.message || err);
    messages.pop();
  } finally {
    $("send").disabled = false;
  }
}

$("ask").addEventListener("submit", ask);
loadModel();
