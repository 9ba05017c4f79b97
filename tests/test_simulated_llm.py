"""The simulated LLM summarizer (``testing.SimulatedLLM``) and ``eval --summarizer simulated``."""

from __future__ import annotations

import asyncio
import json
import random
from statistics import mean

import pytest

from amplifier_module_context_summarize.backends.base import BackendError, Fault
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.evaluation import cli
from amplifier_module_context_summarize.evaluation.large_outputs import HIGH, LOW, MIN_CHARS, enlarge_message
from amplifier_module_context_summarize.summarizer.prompts import load_prompts, render_transcript
from amplifier_module_context_summarize.summarizer.span import _previous_section
from amplifier_module_context_summarize.testing import SimulatedLLM, mixed_history
from amplifier_module_context_summarize.testing.simulated_llm import (
    PREAMBLES,
    REFUSAL_TEXT,
    parse_limits,
    parse_prompt,
)

PROMPTS = load_prompts()
COUNTER = TokenCounter()


def path_heavy(turns: int, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    messages: list[dict] = [
        {"role": "user", "content": "Fix the failing import in the storage layer and run the tests."}
    ]
    for i in range(turns):
        path = f"/home/dev/projects/storage-svc/src/storage_svc/backends/shard_{rng.randrange(99)}/io_{i}.py"
        messages.append(
            {
                "role": "assistant",
                "content": f"I will read {path} because the traceback points at storage_svc/backends/io_{i}.py.",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": json.dumps({"path": path})},
                    }
                ],
            }
        )
        listing = "\n".join(f"{path.rsplit('/', 1)[0]}/mod_{j}_{i}.py" for j in range(12))
        messages.append(
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "content": f"{listing}\nImportError: cannot import name 'Shard{i}'",
            }
        )
    return messages


def summarize_prompt(messages: list[dict], words: int, previous: str | None = None) -> str:
    return PROMPTS.user(
        "summarize",
        previous_section=_previous_section(previous),
        continuation_note=" (it continues from the earlier summary)" if previous else "",
        max_words=str(words),
        transcript=render_transcript(messages),
    )


def ask(llm: SimulatedLLM, prompt: str, kind: str = "summarize", cap: int = 4000):
    return asyncio.run(llm.complete(PROMPTS.system(kind), prompt, cap))


def test_parses_the_prompts_the_module_sends():
    previous = "### Goal\nShip it.\n### Progress\n- read src/a.py"
    prompt = summarize_prompt(mixed_history(4, size=8), 150, previous)
    parsed = parse_prompt(PROMPTS.system("summarize"), prompt)
    assert parsed.kind == "summarize" and parsed.word_limit == 150 and parsed.token_limit is None
    assert parsed.previous == previous and "[#2 USER]\n" in parsed.transcript and "Ship it" not in parsed.transcript
    merge = PROMPTS.user("merge", transcript="### Goal\nA\n\n---\n\n### Goal\nB", max_words="90")
    parsed = parse_prompt(PROMPTS.system("merge"), merge)
    assert parsed.kind == "merge" and parsed.word_limit == 90 and parsed.previous is None
    assert parse_limits("Stay under 1,200 words (about 1,600 tokens).") == (1200, 1600)


def test_same_seed_same_answers_in_any_order_and_retries_differ():
    prompts = [summarize_prompt(mixed_history(n, size=8), 120) for n in (3, 5, 7)]
    first = [ask(SimulatedLLM(3), p).text for p in prompts]
    backwards = SimulatedLLM(3)
    assert [ask(backwards, p).text for p in reversed(prompts)] == list(reversed(first))
    other = [ask(SimulatedLLM(4), p).text for p in prompts]
    assert other != first
    again = SimulatedLLM(3)
    answers = [ask(again, prompts[0]).text for _ in range(4)]
    assert answers[0] == first[0] and len(set(answers)) > 1  # a retry samples afresh, as providers do
    assert ask(again.fork(), prompts[0]).text == first[0]  # a fork counts its own attempts


def test_length_loosely_follows_the_word_limit():
    messages = mixed_history(20, size=30)  # far more material than the limit
    llm = SimulatedLLM(0, empty_rate=0, refusal_rate=0)
    ratios = []
    for seed in range(40):
        llm.seed = seed
        text = ask(llm, summarize_prompt(messages, 200)).text
        ratios.append(len(text.split()) / 200)
    assert 0.7 < mean(ratios) < 1.1
    assert min(ratios) > 0.5 and max(ratios) < 1.6
    assert sum(r > 1.0 for r in ratios) >= 3  # it does overshoot now and then
    assert sum(r <= 1.0 for r in ratios) > len(ratios) / 2  # but mostly stays under


def test_max_output_tokens_is_a_hard_stop_and_usage_is_reported():
    llm = SimulatedLLM(0, empty_rate=0, refusal_rate=0)
    prompt = summarize_prompt(mixed_history(40, size=40), 600)
    completion = ask(llm, prompt, cap=120)
    assert completion.output_tokens == COUNTER.count_text(completion.text) <= 120
    assert completion.output_tokens > 100
    assert completion.input_tokens > COUNTER.count_text(prompt)
    assert llm.stats.events["cut"] == 1


def test_path_heavy_summaries_cost_several_tokens_a_word():
    llm = SimulatedLLM(0, empty_rate=0, refusal_rate=0, preamble_rate=0)
    text = ask(llm, summarize_prompt(path_heavy(30), 200)).text
    assert "/home/dev/projects/storage-svc" in text
    assert COUNTER.count_text(text) / len(text.split()) > 2


def test_thin_spans_are_padded_past_their_own_size():
    llm = SimulatedLLM(0, empty_rate=0, refusal_rate=0)
    messages = [{"role": "user", "content": "Rename the helper in src/util.py to parse_config."}]
    completion = ask(llm, summarize_prompt(messages, 150))
    assert completion.output_tokens > COUNTER.count_text(render_transcript(messages))


@pytest.mark.slow
def test_flaws_appear_at_about_their_rates():
    llm = SimulatedLLM(5)
    previous = "### Goal\nMigrate the cache to Redis.\n### Progress\n- Ran `pytest -q tests/test_cache.py`: 3 failed"
    texts = [
        ask(llm, summarize_prompt(mixed_history(6 + n % 5, size=8), 120, previous) + f"\n{n}").text for n in range(400)
    ]
    empty = sum(not t for t in texts)
    refusals = sum(t == REFUSAL_TEXT for t in texts)
    preambles = sum(any(t.startswith(p) for p in PREAMBLES) for t in texts)
    restated = sum("Migrate the cache to Redis." in t for t in texts)
    assert 2 <= empty <= 18  # 2%
    assert 1 <= refusals <= 12  # 1%
    assert 0.5 < preambles / len(texts) < 0.7  # 60% of the answers that are not empty or refused
    assert 0.2 < llm.stats.events["restated"] / len(texts) < 0.4  # 30%
    assert 0 < restated < llm.stats.events["restated"]  # a restatement keeps only part of the earlier summary
    assert llm.stats.calls == 400 and llm.stats.events["fault"] == 0


def test_faults_and_latency_are_configurable():
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    llm = SimulatedLLM(0, fault_rate=1.0, latency_s=2.0, sleep=sleep)
    with pytest.raises(BackendError) as raised:
        ask(llm, summarize_prompt(mixed_history(3, size=8), 100))
    assert raised.value.fault is Fault.SERVER_ERROR
    assert len(waits) == 1 and 1.4 <= waits[0] <= 2.6


def test_merges_keep_the_last_open_items_only():
    llm = SimulatedLLM(0, empty_rate=0, refusal_rate=0, omit_share=(0.0, 0.0), preamble_rate=0)
    first = "### Goal\nShip v2.\n### Open items\n- Old plan: rewrite the parser"
    second = "### Progress\n- Parser fixed in src/parse.py\n### Open items\n- Next: release notes"
    text = ask(llm, PROMPTS.user("merge", transcript=f"{first}\n\n---\n\n{second}", max_words="200"), "merge").text
    assert "Ship v2." in text and "release notes" in text and "Old plan" not in text


def test_large_outputs_grow_substantial_results_and_keep_their_text():
    original = "README.md\n" + "line of the real file\n" * 150
    message = {"role": "tool", "tool_call_id": "c1", "content": original}
    grown, count = enlarge_message(message, "s", 3)
    assert count == 1 and grown["content"].startswith(original) and LOW <= len(grown["content"]) <= HIGH
    assert message["content"] == original  # the session's own message is not changed
    assert enlarge_message(message, "s", 3)[0] == grown  # deterministic
    short = {"role": "tool", "tool_call_id": "c2", "content": "x" * (MIN_CHARS - 1)}
    assert enlarge_message(short, "s", 4) == (short, 0)
    blocks = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": original}]}
    grown, count = enlarge_message(blocks, "s", 5)
    assert count == 1 and grown["content"][0]["content"].startswith(original)


@pytest.mark.slow
def test_eval_runs_the_simulated_llm_and_reports_the_summarizer_path(tmp_path, capsys):
    out = tmp_path / "out"
    code = cli.main(
        [
            "--summarizer", "simulated", "--seed", "2", "--quick", "--sessions", "swe-django-15213",
            "--strategies", "summarize,truncation", "--budget", "12000", "--large-outputs",
            "--out", str(out), "--quiet", "--jobs", "2",
        ]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "simulated(seed=2)" in captured.out and "tool outputs grown" in captured.out
    assert "| fallbacks |" in captured.out and "## Summarizer path" in (out / "results.md").read_text()
    data = json.loads((out / "results.json").read_text())
    strategies = data["summary"]["strategies"]
    for name in ("summarize", "truncation"):
        a = strategies[name]
        assert sum(a["fallbacks"].values()) == a["compactions"] > 0
        assert 0 <= a["marker_views"] <= a["views_without_summary"] <= a["cut_views"]
    assert strategies["truncation"]["marker_views"] == strategies["truncation"]["cut_views"] > 0
    assert strategies["summarize"]["provider_calls"] > 0 and strategies["summarize"]["summarizer_output_tokens"] > 0
    for run in data["runs"]:
        for record in run["records"]:
            assert len(record["fallbacks"]) == int(record["compacted"]) or len(record["fallbacks"]) > 1
            assert record["shows"] in ("summary", "marker", "none")
