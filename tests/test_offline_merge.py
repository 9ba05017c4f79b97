"""The offline tier merge folds summaries section by section and never re-reads the span behind them."""

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.offline_merge import merge_summaries
from amplifier_module_context_summarize.testing import mixed_history, replay
from amplifier_module_context_summarize.tokens import TokenCounter

COUNT = TokenCounter().count_text


def test_sections_are_joined_oldest_first_and_the_oldest_items_go_first():
    older = "### User requests\n- fix the login bug\n- add a test\n\n### Assistant progress\n- found the cause"
    newer = "Plain words the model wrote.\nA second line.\n\n### User requests\n- add a test\n- ship it"
    merged = merge_summaries([older, newer], 1000, COUNT)
    requests = merged.split("### User requests\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert requests == ["- fix the login bug", "- add a test", "- ship it"]  # a repeat keeps its newest place
    assert "### Assistant progress\n- found the cause" in merged
    assert "### Earlier summary\nPlain words the model wrote.\nA second line." in merged

    small = merge_summaries([older, newer], 38, COUNT)
    assert COUNT(small) <= 38 and "- ship it" in small and "- fix the login bug" not in small
    assert merge_summaries([older], 1, COUNT) == ""


async def test_offline_merges_read_summaries_not_the_history(monkeypatch):
    """Compaction cost must not grow with the session: no merge re-reads the span it stands for."""
    manager = create_manager({"max_tokens": 6_000, "summarizer": "extractive", "summary_budget_ratio": 0.05})
    spans: list[int] = []
    extractive = manager.summarizer.extractive

    def counting(messages, previous, fallback):
        spans.append(len(messages))
        return extractive(messages, previous, fallback)

    monkeypatch.setattr(manager.summarizer, "extractive", counting)
    history = mixed_history(200)
    await replay(manager, history, None, budget=6_000)
    assert manager.state.segments and max(s.tier for s in manager.state.segments) >= 1  # merges happened
    assert max(spans) < len(history) // 4  # each summary read one segment's span, never the merged range
