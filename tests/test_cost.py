"""The prompt-cache cost model: reads, writes and uncached input per request, checked against figures worked
out by hand, and the price table's date in what is printed."""

from __future__ import annotations

import pytest

from amplifier_module_context_summarize.evaluation.prices import PRICES_DATE, TABLES, ModelPrice, PriceTable
from amplifier_module_context_summarize.evaluation.prompt_cache import CacheMeter, CacheUsage, InContextSummaries, bill


def _msg(role: str, name: str, tokens: int) -> dict:
    return {"role": role, "content": name, "n": tokens}


def _tables(min_cacheable: int = 100) -> tuple[PriceTable, PriceTable]:
    anthropic = ModelPrice("a", 1.0, 5.0, 0.1, 1.25, min_cacheable)
    openai = ModelPrice("o", 1.0, 4.0, 0.25, 1.0, min_cacheable)
    return PriceTable("anthropic", anthropic, anthropic, "test"), PriceTable("openai", openai, openai, "test")


SYS, U1 = _msg("system", "sys", 200), _msg("user", "u1", 300)
A1, U2 = _msg("assistant", "a1", 50), _msg("user", "u2", 150)


def test_prefix_cache_accounting_by_hand():
    anthropic, openai = _tables()
    meter = CacheMeter(lambda m: m["n"], [anthropic, openai])
    # 1: nothing cached. Anthropic writes up to its last breakpoint (500); OpenAI bills all as input.
    assert meter.request([SYS, U1]) == {"anthropic:a": (0, 500, 0), "openai:o": (0, 0, 500)}
    # 2: the view extends the first. Anthropic reads the 500 written at the last message, writes the new 200;
    # OpenAI reads the shared 500 rounded down to 128-token steps (384).
    assert meter.request([SYS, U1, A1, U2]) == {"anthropic:a": (500, 200, 0), "openai:o": (384, 0, 316)}
    # 3: a compaction replaced U1: only the system block (200, written at its breakpoint) is read.
    summary, a2 = _msg("user", "summary", 100), _msg("assistant", "a2", 40)
    assert meter.request([SYS, summary, a2]) == {"anthropic:a": (200, 140, 0), "openai:o": (128, 0, 212)}
    usage = meter.usage["anthropic:a"]
    assert (usage.requests, usage.read, usage.write, usage.uncached) == (3, 700, 840, 0)
    # At $1/M input: 700 x 0.1 + 840 x 1.25 = 1,120 input tokens' worth; a summarizer call of 1,000 in and
    # 100 out at $1/$5 adds 1,000 + 500.
    priced = bill(usage, 1_000, 100, anthropic)
    assert round(priced.input_equivalent) == 1_120 + 1_500
    assert abs(priced.dollars - 2_620 / 1e6) < 1e-12
    assert round(bill(meter.usage["openai:o"], 0, 0, openai).input_equivalent) == (512 * 0.25 + 1028)


def test_a_summary_asked_at_the_end_of_the_view_is_a_cache_read_by_hand():
    anthropic, openai = _tables()
    meter = CacheMeter(lambda m: m["n"], [anthropic, openai])
    meter.request([SYS, U1, A1, U2])
    ask = {"role": "user", "content": "summarize", "n": 60, "metadata": {"ephemeral": True}}
    # Anthropic: the breakpoint stays on U2 (the instruction is ephemeral): all 700 read, nothing written, the
    # instruction uncached. OpenAI: the shared 700 in 128-token steps (640), the rest input.
    assert meter.summary_request([SYS, U1, A1, U2, ask]) == {"anthropic:a": (700, 0, 60), "openai:o": (640, 0, 120)}
    # Totalled apart from the agent's requests.
    assert meter.usage["anthropic:a"].requests == 1 and meter.summaries["anthropic:a"].requests == 1
    # A prefix no request ended at: only the system block is read, the rest written.
    assert meter.summary_request([SYS, U1, ask])["anthropic:a"] == (200, 300, 60)
    # Billed: with the agent's own model the calls go under the cache (900 read x 0.1, 300 written x 1.25, 120
    # uncached) instead of as their 880 tokens of uncached input; priced at another model, as the compact prompts
    # they would be (here 300 tokens).
    calls = InContextSummaries(meter.summaries["anthropic:a"], input=880, compact_input=300)
    plain = bill(CacheUsage(), 1_000, 0, anthropic)
    cached = bill(CacheUsage(), 1_000, 0, anthropic, calls)
    assert round(plain.input_equivalent) == 1_000
    assert round(cached.input_equivalent) == (1_000 - 880) + 90 + 375 + 120
    cheap = ModelPrice("c", 0.5, 2.5, 0.05, 0.625, 100)
    other = PriceTable("anthropic", anthropic.agent, cheap, "test")
    assert round(bill(CacheUsage(), 1_000, 0, other, calls).dollars * 1e6, 6) == (1_000 - 880 + 300) * 0.5


def test_system_messages_are_one_block_and_a_changed_system_prompt_breaks_everything():
    anthropic, _ = _tables()
    meter = CacheMeter(lambda m: m["n"], [anthropic])
    meter.request([SYS, U1])
    other = _msg("system", "another system prompt", 200)
    assert meter.request([other, U1]) == {"anthropic:a": (0, 500, 0)}


def test_anthropic_looks_back_at_most_20_blocks():
    anthropic, _ = _tables()
    meter = CacheMeter(lambda m: m["n"], [anthropic])
    meter.request([SYS, U1])
    more = [_msg("user" if i % 2 else "assistant", f"m{i}", 10) for i in range(21)]
    # The previous breakpoint is 21 blocks back: only the system block is found.
    assert meter.request([SYS, U1, *more]) == {"anthropic:a": (200, 510, 0)}
    fewer = [_msg("assistant", "x", 10), _msg("user", "y", 10)]
    assert meter.request([SYS, U1, *more, *fewer])["anthropic:a"] == (710, 20, 0)


def test_below_the_minimum_nothing_is_written():
    anthropic, _ = _tables(min_cacheable=1_000)
    meter = CacheMeter(lambda m: m["n"], [anthropic])
    assert meter.request([SYS, U1]) == {"anthropic:a": (0, 0, 500)}
    assert meter.request([SYS, U1, A1]) == {"anthropic:a": (0, 0, 550)}


def test_price_tables_carry_their_date():
    for price in TABLES.values():
        assert PRICES_DATE in price.label
        assert price.summarizer.cache_read < price.summarizer.input
    assert TABLES["anthropic"].agent.cache_write == pytest.approx(1.25 * TABLES["anthropic"].agent.input)
    assert TABLES["anthropic"].agent.cache_read == pytest.approx(0.1 * TABLES["anthropic"].agent.input)
    assert TABLES["openai"].agent.cache_write == TABLES["openai"].agent.input


def test_raw_sessions_are_read_in_every_recorded_format(tmp_path):
    from pathlib import Path

    from amplifier_module_context_summarize.benchmark.cost_compare import load_raw

    fixtures = Path(__file__).parent / "fixtures" / "sessions"
    (tmp_path / "agent").mkdir()
    for name in ("claude_code.jsonl", "gemini_chat.json", "mini_swe_agent.traj.json"):
        (tmp_path / "agent" / name).write_bytes((fixtures / name).read_bytes())
    (tmp_path / "notes.json").write_text('{"not": "a session"}')

    sessions = load_raw(tmp_path)

    assert sorted(s.name.split(":")[0] for s in sessions) == ["claude-code", "gemini-cli", "swe-agent"]
    assert all(s.messages for s in sessions)
    with pytest.raises(ValueError, match="is not a folder"):
        load_raw(tmp_path / "agent" / "nothing-here")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no recorded sessions"):
        load_raw(tmp_path / "empty")


async def test_every_policy_replays_a_corpus_session_with_probes():
    """``bench --cost`` replays each policy's manager through the evaluation's replay: every policy's manager must
    be one it can read (a claude-code-style manager once was not, and ``bench --cost`` stopped at its first one)."""
    from amplifier_module_context_summarize.benchmark.cost_compare import POLICIES, compare
    from amplifier_module_context_summarize.evaluation.cli import DEFAULT_CORPUS
    from amplifier_module_context_summarize.evaluation.loader import load_corpus

    sessions = [s for s in load_corpus(DEFAULT_CORPUS) if s.probes][:1]
    result = await compare({"bundled": sessions}, budgets=[20_000], policies=POLICIES)
    assert {row.policy for row in result.rows} >= {"claude-code-style", "summarize", "none-200k"}


async def test_bench_cost_splits_the_summaries_share_into_parts_that_add_up_to_it():
    """Issue 48: where the summaries' share of the bill goes (prefix reads, the instruction, output, merges), each
    part priced from the run's own counts: the parts add up to the share, and merges are told from summaries."""
    from amplifier_module_context_summarize.benchmark.cost_compare import (
        _table_of,
        compare,
        render,
        simulated_session,
        summaries_share,
    )
    from amplifier_module_context_summarize.benchmark.cost_shares import summary_parts

    result = await compare({"simulation": [simulated_session(150)]}, budgets=[20_000], policies=["summarize"])
    rows = [r for r in result.rows if r.policy.startswith("summarize")]
    assert rows and all(r.merge_input > 0 and 0 < r.merge_output < r.summarizer_output for r in rows), "no merge"
    for row in rows:
        parts = summary_parts(row.summary_tokens, _table_of(result, row.table))
        assert parts.total / row.dollars == pytest.approx(summaries_share(result, row), rel=1e-9)
        assert parts.merge_input > 0 and parts.merge_output > 0 and parts.summary_output > 0
        cheap = "summaries by" in row.policy
        assert (parts.in_context_as_compact > 0) == cheap and (parts.prefix_reads > 0) == (not cheap)
    text = render(result)
    assert "Summaries' share of the bill, by part" in text and "merge output" in text
    assert "target <= 2%" not in text, "issue 48 withdrew the 2% target"
