"""``eval --base-url`` runs the evaluation against any local OpenAI-compatible server, as ``compact`` does (issue 33).

The server here is a real HTTP server on loopback speaking Chat Completions, as llama.cpp's ``llama_cpp.server``,
vLLM or Ollama do: the evaluation reaches it through the real ``openai`` SDK, with no key in the environment.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_evaluation import BUDGET, no_keys, small_corpus

from amplifier_module_context_summarize.evaluation import cli
from amplifier_module_context_summarize.evaluation.models import choose_summarizer


class ChatCompletions(BaseHTTPRequestHandler):
    """Answers every summarize request with the span's first request, verbatim (a grounded summary)."""

    seen: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "model": body["model"], "auth": self.headers.get("Authorization")})
        prompt = body["messages"][-1]["content"]
        span = prompt.rsplit("<<<TRANSCRIPT", 1)[-1]
        first = next((line for line in span.splitlines() if line.startswith("USER: ")), "USER: the task")
        text = f"### Goal\n{first.removeprefix('USER: ')[:200]}"
        answer = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    ChatCompletions.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), ChatCompletions)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_eval_summarizes_through_the_server_base_url_names(server, tmp_path, monkeypatch, capsys):
    no_keys(monkeypatch)
    out = tmp_path / "out"
    argv = ["--corpus", str(small_corpus(tmp_path / "corpus")), "--out", str(out), "--budget", str(BUDGET)]
    code = cli.main([*argv, "--strategies", "summarize", "--base-url", server, "--model", "smollm2-135m", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert ChatCompletions.seen, "no summary was asked of the server"
    assert {s["path"] for s in ChatCompletions.seen} == {"/v1/chat/completions"}
    assert {s["model"] for s in ChatCompletions.seen} == {"smollm2-135m"}
    assert all(s["auth"] == "Bearer not-needed" for s in ChatCompletions.seen)  # no key: the placeholder
    data = json.loads((out / "results.json").read_text())
    assert data["settings"]["summarizer"] == f"openai:smollm2-135m at {server}"
    summarize = data["summary"]["strategies"]["summarize"]
    assert 0 < summarize["provider_calls"] <= len(ChatCompletions.seen)
    assert summarize["fallbacks"].get("none"), "the server wrote the summaries"


def test_base_url_implies_openai_and_refuses_another_summarizer():
    spec, note = choose_summarizer(None, None, {}, base_url="http://127.0.0.1:8080/v1")
    assert spec.provider == "openai" and spec.base_url == "http://127.0.0.1:8080/v1" and note is None
    with pytest.raises(ValueError, match="--base-url"):
        choose_summarizer("anthropic", None, {}, base_url="http://127.0.0.1:8080/v1")


def test_the_label_hides_credentials_in_the_base_url():
    spec, _ = choose_summarizer("openai", "m", {}, base_url="http://user:secret@127.0.0.1:8080/v1?key=abc")
    assert "secret" not in spec.label and "abc" not in spec.label
