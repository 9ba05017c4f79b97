"""The main-job command: ``python -m amplifier_module_context_summarize compact``."""

import json
import re
import subprocess
import sys

import pytest

from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.testing import mixed_history


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def test_example_runs_offline_and_says_so(capsys):
    assert main(["compact", "--example"]) == 0
    out, err = capsys.readouterr()
    assert "extractive summarizer" in err
    assert "a [CONTEXT SUMMARY] for the oldest " in out or "with tool outputs masked" in out  # the hybrid may mask
    assert re.search(r"; [1-9]\d* compactions in ", out)


def test_json_output_on_a_file_in_every_shape(tmp_path, capsys):
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(m) for m in mixed_history(40)))
    assert main(["compact", str(path), "--budget", "8000", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    report = result["report"]
    assert report["messages"] == len(mixed_history(40)) and report["compactions"] >= 1
    assert report["view_tokens"] <= 8000 < report["history_tokens"]
    assert result["view"][1]["content"].startswith("[CONTEXT SUMMARY]")


def test_json_array_and_amplifier_transcript_lines(tmp_path, capsys):
    messages = mixed_history(10)
    array = tmp_path / "session.json"
    array.write_text(json.dumps(messages, indent=1))
    transcript = tmp_path / "transcript.jsonl"
    transcript.write_text("\n".join(json.dumps({**m, "timestamp": "2026-01-01T00:00:00Z"}) for m in messages))
    for path in (array, transcript):
        assert main(["compact", str(path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["report"]["messages"] == len(messages)


@pytest.mark.parametrize(
    ("content", "where", "problem"),
    [
        ('{"role": "user", "content": \n', ":1:", "invalid JSON"),
        ('{"content": "who?"}\n', ":1:", "no 'role'"),
        ('[\n{"role": "alien"}\n]', ":2:", "'role' is 'alien'"),
        ("", "", "no messages"),
    ],
)
def test_bad_files_fail_with_file_and_line(tmp_path, capsys, content, where, problem):
    """Nothing readable: refused. A file with good lines too is read, the bad ones skipped (test_reader_robustness)."""
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    assert main(["compact", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {path}{where}") and problem in err
    assert len(err.splitlines()) == 1


def test_unreadable_file(tmp_path, capsys):
    assert main(["compact", str(tmp_path / "missing.jsonl")]) == 2
    assert "missing.jsonl: cannot read the file" in capsys.readouterr().err


def test_direct_backend_without_key_names_the_variable(capsys):
    assert main(["compact", "--example", "--summarizer", "anthropic"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


@pytest.mark.slow
def test_module_entry_runs_as_a_program():
    result = subprocess.run(
        [sys.executable, "-m", "amplifier_module_context_summarize", "compact", "--example", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["report"]["summarizer"] == "extractive"


def test_native_summarizer_without_its_key_names_the_variable_of_its_family(capsys):
    """``--summarizer native`` takes the provider from the model (Claude by default), and that provider's key."""
    assert main(["compact", "--example", "--summarizer", "native"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err
    assert main(["compact", "--example", "--summarizer", "native", "--model", "gpt-5"]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert main(["inspect", "--example", "--summarizer", "native"]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


@pytest.fixture
def native_server():
    """Anthropic's compaction stand-in behind a real HTTP server on loopback: the CLI's SDK reaches it by URL."""
    import asyncio
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from amplifier_module_context_summarize.testing.native_standins import AnthropicCompactionStandIn

    stand_in = AnthropicCompactionStandIn()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with lock:  # the stand-in's record of requests is one list
                status, headers, data = asyncio.run(stand_in.handle("POST", self.path, dict(self.headers), body))
            self.send_response(status)
            for name, value in headers.items():
                if name.lower() != "content-length":
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", stand_in
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def test_compact_with_the_native_summarizer_asks_the_providers_compaction(native_server, monkeypatch, capsys):
    url, stand_in = native_server
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-not-a-real-key")
    assert main(["compact", "--example", "--summarizer", "native", "--base-url", url, "--json"]) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)["report"]
    asked = [body for path, _, body in stand_in.requests if path == "/v1/messages" and "compaction" in body]
    assert asked and not stand_in.rejections, stand_in.rejections
    assert report["summarizer"] == "native:anthropic" and report["provider_calls"] >= len(asked)
    assert not report["fallbacks"], report["fallbacks"]
    assert "sk-test-not-a-real-key" not in out + err
