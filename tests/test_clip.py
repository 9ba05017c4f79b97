"""Clipping text to a size (core/clip.py)."""

from __future__ import annotations


def test_clip_middle_never_makes_text_longer():
    from amplifier_module_context_summarize.core.clip import clip_middle

    text = "alpha failed function empty; --stat delta error when backoff ok pytest the is diff gamma import None"
    assert len(clip_middle(text, len(text) - 10)) <= len(text)
    assert clip_middle("x" * 5000, 400).startswith("x" * 200)  # real clipping still happens
