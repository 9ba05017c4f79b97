"""The bundled evaluation corpus: sessions are valid input and every probe is answerable from the session.

See ``amplifier_module_context_summarize/evaluation/corpus/README.md`` for the format.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import amplifier_module_context_summarize
from amplifier_module_context_summarize.core.messages import message_text, validate_message
from amplifier_module_context_summarize.core.tokens import text_counter

_PACKAGE_DIR = Path(
    amplifier_module_context_summarize.__file__ or next(iter(amplifier_module_context_summarize.__path__))
)
PACKAGE_DIR = _PACKAGE_DIR.parent if _PACKAGE_DIR.suffix == ".py" else _PACKAGE_DIR
EVAL_DIR = PACKAGE_DIR / "evaluation"
CORPUS = EVAL_DIR / "corpus"
RAW_DIR = Path(os.environ.get("CORPUS_RAW_DIR", Path(__file__).resolve().parents[2] / "shared" / "corpus" / "raw"))

KINDS = {"artifact": 5, "recall": 4, "continuation": 3, "decision": 3}
PROBE_FIELDS = {"id", "at", "kind", "question", "answer", "keys"}
ROLES = {"system", "user", "assistant", "tool"}


def _index() -> list[dict[str, Any]]:
    return json.loads((CORPUS / "index.json").read_text(encoding="utf-8"))


def _names() -> list[str]:
    return [entry["name"] for entry in _index()]


def _load(name: str) -> list[dict[str, Any]]:
    text = (CORPUS / f"{name}.jsonl").read_text(encoding="utf-8")
    # One message per physical line: split on "\n" only (never on U+2028 and the like).
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def _probes(name: str) -> list[dict[str, Any]]:
    return json.loads((CORPUS / f"{name}.probes.json").read_text(encoding="utf-8"))


def test_corpus_has_enough_varied_sessions():
    index = _index()
    names = [e["name"] for e in index]
    assert len(names) >= 8
    assert len(set(names)) == len(names)
    sources = Counter(e["source"] for e in index)
    assert sources["claude-code"] >= 3
    assert sources["mini-swe-agent"] >= 3
    assert sources["gemini-cli"] >= 1
    for name in names:
        assert (CORPUS / f"{name}.jsonl").is_file()
        assert (CORPUS / f"{name}.probes.json").is_file()
    total = sum(p.stat().st_size for p in CORPUS.iterdir() if p.is_file())
    assert total < 12 * 1024 * 1024


def test_tool_calls_occur_in_more_than_one_shape():
    shapes: set[str] = set()
    for name in _names():
        for m in _load(name):
            if m.get("tool_calls"):
                shapes.add("openai")
            for block in m["content"] if isinstance(m.get("content"), list) else []:
                if block.get("type") == "tool_use":
                    shapes.add("anthropic")
                elif block.get("type") == "tool_call":
                    shapes.add("amplifier")
    assert shapes == {"openai", "anthropic", "amplifier"}


@pytest.mark.parametrize("name", _names())
def test_session_is_valid_input(name):
    messages = _load(name)
    assert len(messages) >= 60
    chars = 0
    for i, message in enumerate(messages):
        validate_message(message)
        assert message["role"] in ROLES, f"message {i}"
        content = message.get("content")
        assert content is None or isinstance(content, str) or all(isinstance(b, dict) for b in content)
        chars += len(message_text(message))
    assert chars // 4 >= 25_000, f"{name}: ~{chars // 4} tokens"
    entry = next(e for e in _index() if e["name"] == name)
    assert entry["messages"] == len(messages)


@pytest.mark.parametrize("name", _names())
def test_probes_are_well_formed_and_answerable(name):
    messages = _load(name)
    texts = [message_text(m).lower() for m in messages]
    probes = _probes(name)
    assert len(probes) >= 15
    kinds = Counter(p["kind"] for p in probes)
    for kind, minimum in KINDS.items():
        assert kinds[kind] >= minimum, f"{name}: {kinds[kind]} {kind} probes"
    assert set(kinds) <= set(KINDS)
    assert len({p["id"] for p in probes}) == len(probes)

    first_seen: dict[str, int | None] = {}
    for p in probes:
        assert set(p) == PROBE_FIELDS, p.get("id")
        assert isinstance(p["question"], str) and p["question"].strip()
        assert isinstance(p["answer"], str) and p["answer"].strip()
        at = p["at"]
        assert isinstance(at, int) and not isinstance(at, bool)
        assert 2 * len(messages) // 3 <= at < len(messages), f"{p['id']}: at={at} not in the last third"
        assert isinstance(p["keys"], list) and 1 <= len(p["keys"]) <= 4
        for key in p["keys"]:
            assert isinstance(key, str) and key
            k = key.lower()
            if k not in first_seen:
                first_seen[k] = next((j for j, t in enumerate(texts) if k in t), None)
            seen = first_seen[k]
            assert seen is not None and seen < at, f"{p['id']}: key {key!r} does not occur before message {at}"


@pytest.mark.parametrize("name", [e["name"] for e in _index() if e["source"] == "claude-code"])
def test_claude_code_sessions_have_a_reference_summary(name):
    reference = json.loads((CORPUS / f"{name}.reference.json").read_text(encoding="utf-8"))
    assert set(reference) == {"source", "summary", "boundary"}
    assert reference["source"] == "claude-code"
    assert "continued from a previous conversation" in reference["summary"]
    messages = _load(name)
    assert 0 < reference["boundary"] < len(messages)
    # The summary itself is not part of the session.
    assert not any(
        isinstance(m.get("content"), str) and m["content"].startswith("This session is being continued")
        for m in messages
    )


CONVERTER = Path(__file__).resolve().parent.parent / "tools" / "convert_raw.py"
"""Maintainer tooling kept in the repository, outside the package (not in the wheel)."""


def _converter():
    if not CONVERTER.is_file():
        pytest.skip(f"{CONVERTER} is absent: the corpus converter is repository tooling (not run from a checkout?)")
    spec = importlib.util.spec_from_file_location("convert_raw", CONVERTER)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_converter_checker_accepts_the_bundled_probes():
    """Includes the early-probe rule: most probes ask about facts far behind the verbatim tail."""
    convert_raw = _converter()
    count_tokens = text_counter("cl100k_base")
    for name in _names():
        messages = _load(name)
        counts = [count_tokens(message_text(m)) for m in messages]
        assert convert_raw.check_probes(name, messages, _probes(name), counts) == []


@pytest.mark.slow
@pytest.mark.skipif(not RAW_DIR.is_dir(), reason="raw sessions not available")
def test_converter_reproduces_the_bundled_sessions(tmp_path):
    convert_raw = _converter()
    convert_raw.convert(RAW_DIR, tmp_path)
    for produced in sorted(tmp_path.iterdir()):
        assert produced.read_bytes() == (CORPUS / produced.name).read_bytes(), produced.name
