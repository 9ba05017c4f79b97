"""Installable as an Amplifier bundle: the behavior file, and foundation's context-simple keys mount."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from amplifier_module_context_summarize.config import parse_config

BEHAVIOR = Path(__file__).resolve().parent.parent / "behaviors" / "context-summarize.yaml"


def test_behavior_file_sets_the_context_module():
    yaml = pytest.importorskip("yaml")
    data = yaml.safe_load(BEHAVIOR.read_text())
    assert data["bundle"]["name"]
    context = data["session"]["context"]
    assert context["module"] == "context-summarize"
    assert context["source"].startswith("git+https://")
    parse_config(context["config"])


def test_foundation_context_simple_keys_arrive_and_mount_with_one_warning(caplog):
    caplog.set_level(logging.WARNING)
    config = parse_config({"max_tokens": 300000, "compact_threshold": 0.8, "auto_compact": True})
    assert (config.max_tokens, config.compact_threshold) == (300000, 0.8)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "auto_compact" in warnings[0]


def test_an_unknown_key_of_no_module_is_still_an_error():
    with pytest.raises(ValueError, match="not a known key"):
        parse_config({"max_tokenz": 1})
