"""Clipping text to a size (core/clip.py)."""

from __future__ import annotations


def test_clip_middle_never_makes_text_longer():
    from amplifier_module_context_summarize.core.clip import clip_middle

    text = "alpha failed function empty; --stat delta error when backoff ok pytest the is diff gamma import None"
    assert len(clip_middle(text, len(text) - 10)) <= len(text)
    assert clip_middle("x" * 5000, 400).startswith("x" * 200)  # real clipping still happens


def _preview(path: str) -> str:
    from amplifier_module_context_summarize.spill.preview import Spilled, render

    output = "\n".join(f"line {n}: " + "ü" * 60 for n in range(400))
    return render(output, Spilled(path, "m15-b9afd", 9_000, "context_recall"))


def test_a_clipped_spill_preview_names_its_whole_file_whatever_the_limit():
    """A clip's head of half the limit ended inside the preview's ``File:`` line: the view named a path cut short, a
    file that does not exist (feature matrix, ``KNOWN_SPILL_CLIP_SEAM``). The preview's first two lines stay whole."""
    import re

    from amplifier_module_context_summarize.core.clip import clip_middle

    path = "/home/someone/.amplifier/projects/a-project-with-a-long-name/sessions/0f3c9a2e/spill/m15-b9afd.txt"
    preview = _preview(path)
    for limit in (2_000, 685, 400, 120, 48):
        clipped = clip_middle(preview, limit, "; recall with context_recall, handle m15-b9afd")
        assert len(clipped) < len(preview)
        assert re.findall(r"^File: (.*)$", clipped, re.M) == [path], limit
        assert clipped.startswith("[LARGE TOOL OUTPUT SAVED TO A FILE — you have NOT seen all of it]\nFile: ")


def test_a_preview_clipped_at_length_gives_way_from_its_tail_and_other_texts_clip_in_halves():
    from amplifier_module_context_summarize.core.clip import CLIP_MARKER, clip_middle, whole_head

    preview = _preview("/w/spill/m1.txt")
    head = whole_head(preview)
    assert preview[head] == "\n" and preview[:head].endswith("File: /w/spill/m1.txt")
    clipped = clip_middle(preview, head + 60)
    assert clipped.startswith(preview[:head] + CLIP_MARKER)
    assert clipped.endswith(preview[-60:])  # what is left of the limit goes to the tail
    assert whole_head("File: /w/x.txt\nsome output") == 0
    plain = clip_middle("y" * 1_000, 400)
    assert plain.startswith("y" * 200 + CLIP_MARKER) and plain.endswith("\n" + "y" * 200)
