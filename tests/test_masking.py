"""Observation masking: the rung before summarizing, in every tool-call shape, and what it promises."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from amplifier_module_context_summarize import SUMMARY_MARKER, create_manager
from amplifier_module_context_summarize.compaction.view import masking
from amplifier_module_context_summarize.compaction.view.masking import (
    Masks,
    MaskSettings,
    first_line,
    json_longer_than,
    result_ids_in,
)
from amplifier_module_context_summarize.core.handles import resolve
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.core.messages import block_text, canonical_json, result_ids
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.stores import MemoryStore
from amplifier_module_context_summarize.testing import (
    EventRecorder,
    FakeProvider,
    extends,
    replay,
    replay_steps,
    tool_call,
    tool_result,
)

BUDGET = 12_000
WIDE = 30_000
LOG_LINE = "collected item {i}: tests/test_module_{i}.py::test_case PASSED in 0.{i}s\n"


def tool_session(shape: str, turns: int, output_lines: int = 40, request_every: int = 6) -> list[dict]:
    """An agent session dominated by tool outputs: a request every few turns, each turn one call and its output."""
    history: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    for t in range(turns):
        if t % request_every == 0:
            history.append({"role": "user", "content": f"Task {t}: make the tests in tests/test_{t}.py pass."})
        call_id = f"call_{t}"
        history.append(tool_call(shape, call_id, "bash", {"command": f"pytest tests/test_{t}.py -q"}, f"Running {t}."))
        output = "".join(LOG_LINE.format(i=t * 100 + i) for i in range(output_lines))
        history.append(tool_result(shape, call_id, output))
        history.append({"role": "assistant", "content": f"Turn {t}: tests/test_{t}.py passes now."})
    return history


def outputs(view: list[dict]) -> list[str]:
    """The text of every tool output in a view, in order."""
    found = []
    for message in view:
        if message.get("role") == "tool" and isinstance(message.get("content"), str):
            found.append(message["content"])
        elif isinstance(message.get("content"), list):
            found += [
                block_text(b) for b in message["content"] if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
    return found


def make(config=None, store=None):
    recorder = EventRecorder()
    manager = create_manager({"max_tokens": BUDGET, **(config or {})}, hooks=recorder, store=store)
    return manager, recorder


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["openai", "anthropic", "amplifier", "orchestrator", "streaming"])
async def test_masking_replaces_old_outputs_keeps_calls_and_words_and_views_stay_valid(shape):
    history = tool_session(shape, 30, output_lines=100)
    manager, _ = make({"max_tokens": WIDE})
    provider = FakeProvider()
    views = await replay(manager, history, provider, budget=WIDE)  # replay checks every view: valid, fits
    last = views[-1]
    texts = outputs(last)
    masked = [t for t in texts if t.startswith("[tool output masked:")]
    assert masked, "old outputs were not masked"
    assert all(not t.startswith("[tool output masked:") for t in texts[-5:]), "the newest outputs must stay verbatim"
    assert not check_view(last, budget=WIDE, count=manager.counter.count_messages)
    assert not manager.state.segments and not provider.requests  # masking alone was enough
    # the calls and the assistant's words of masked groups are still there
    shown_text = json.dumps(last)
    assert "pytest tests/test_1.py -q" in shown_text or SUMMARY_MARKER in shown_text
    # every placeholder's handle gives back the stored original
    stored = await manager.get_messages()
    for text in masked:
        handle = text.rsplit("handle ", 1)[1].rstrip("]")
        _, original = resolve(stored, handle)
        body = block_text(original) if original.get("type") == "tool_result" else original["content"]
        body = body if isinstance(body, str) else block_text(original)
        assert "collected item" in body and len(body) > 1000


@pytest.mark.slow
async def test_the_hybrid_pays_for_no_summary_while_masking_is_enough():
    history = tool_session("anthropic", 30, output_lines=100)
    manager, recorder = make({"max_tokens": WIDE})
    provider = FakeProvider()
    await replay(manager, history, provider, budget=WIDE)
    posts = recorder.payloads("context:post_compact")
    assert posts and not manager.state.segments and not provider.requests
    assert manager.state.mask_end > 0

    summarize_only, _ = make({"max_tokens": WIDE, "observation_masking": False})
    other = FakeProvider()
    views = await replay(summarize_only, history, other, budget=WIDE)
    assert summarize_only.state.segments and other.requests
    assert not any(t.startswith("[tool output masked:") for t in outputs(views[-1]))


@pytest.mark.slow
async def test_summarizing_starts_when_masking_cannot_reach_the_target():
    history = tool_session("openai", 160, output_lines=30, request_every=3)
    manager, _ = make()
    provider = FakeProvider()
    views = await replay(manager, history, provider, budget=BUDGET)
    state = manager.state
    assert state.segments and provider.requests
    # the summarizer read masked groups: no summarized output reached it verbatim
    prompts = " ".join(json.dumps(r.messages, default=str) for r in provider.requests)
    assert "tool output masked" in prompts
    assert views[-1][1]["content"].startswith(SUMMARY_MARKER)


async def test_views_between_compactions_extend_each_other():
    history = tool_session("anthropic", 120, output_lines=60)
    manager, recorder = make()
    previous, compactions, checked = None, 0, 0
    async for step in replay_steps(manager, history, budget=BUDGET):
        if not step.due:
            continue
        view = await step.request()
        now = len(recorder.payloads("context:post_compact"))
        asked = history[step.index].get("role") == "user" and isinstance(history[step.index]["content"], str)
        if previous is not None and now == compactions and not asked:
            assert extends(previous, view)
            checked += 1
        previous, compactions = view, now
    assert checked > 100 and compactions > 5


@pytest.mark.slow
@pytest.mark.parametrize("shape", ["openai", "anthropic"])
async def test_resume_shows_the_identical_masked_and_summarized_view(shape):
    history = tool_session(shape, 160, output_lines=30, request_every=3)
    store = MemoryStore()
    first, _ = make(store=store)
    views = await replay(first, history, FakeProvider(), budget=BUDGET)
    assert first.state.segments and any(t.startswith("[tool output masked:") for v in views for t in outputs(v))

    second, _ = make(store=store)
    provider = FakeProvider()
    await second.set_messages(history[:-1])  # the last view was asked for before the last reply
    view = await second.get_messages_for_request(token_budget=BUDGET, provider=provider)
    assert view == views[-1]
    assert not provider.requests


async def test_huge_call_arguments_are_clipped_and_stay_valid_json():
    content = "def f():\n    return 1\n" * 150
    history = [{"role": "user", "content": "Write the module."}]
    for t in range(30):
        history.append(tool_call("openai", f"w{t}", "write_file", {"path": f"src/m{t}.py", "content": content}))
        history.append(tool_result("openai", f"w{t}", "ok"))
        history.append({"role": "assistant", "content": f"Wrote src/m{t}.py."})
    manager, _ = make({"max_tokens": WIDE})
    views = await replay(manager, history, FakeProvider(), budget=WIDE)
    calls = [c for m in views[-1] for c in m.get("tool_calls") or []]
    arguments = [json.loads(c["function"]["arguments"]) for c in calls]
    assert any("[clipped: " in a["content"] for a in arguments)
    assert all(a["path"].startswith("src/m") for a in arguments)  # short values are never clipped


@pytest.mark.slow
async def test_observation_masking_off_and_the_mask_strategy():
    history = tool_session("openai", 160, output_lines=30, request_every=3)
    manager, _ = make({"compaction_strategy": "mask"})
    provider = FakeProvider()
    views = await replay(manager, history, provider, budget=BUDGET)
    assert not provider.requests and not manager.state.segments
    assert views[-1][1]["content"].startswith("[CONTEXT TRUNCATED]")
    assert any(t.startswith("[tool output masked:") for t in outputs(views[-1]))


async def test_short_outputs_are_never_masked():
    history = tool_session("openai", 80, output_lines=2, request_every=2)
    manager, _ = make()
    views = await replay(manager, history, FakeProvider(), budget=4_000)
    assert not any(t.startswith("[tool output masked:") for v in views for t in outputs(v))
    assert all(len(result_ids(m)) <= 1 for m in views[-1])


@pytest.mark.parametrize("shape", ["openai", "anthropic", "amplifier"])
async def test_masking_never_makes_a_view_larger_than_the_outputs_it_replaces(shape):
    """Under a low ``mask_min_chars`` a placeholder can be longer than the output: it must then not be used,
    and what planning counts for a masked group must be what the view shows (a view once went over budget)."""
    from amplifier_module_context_summarize.compaction.view.masking import Masks, MaskSettings

    history = tool_session(shape, 12, output_lines=1, request_every=4)  # outputs of ~75 chars
    history += tool_session(shape, 4, output_lines=40)[1:]  # and some long ones
    manager, _ = make()
    await manager.set_messages(history)
    live = manager.history
    masks = Masks(live, MaskSettings(min_chars=50, keep_recent=0, recall_tool="context_recall"))
    closed = live.last_cuttable
    shown = masks.span(0, closed)
    count = live.counter.count_messages
    assert masks.tokens(0, closed) == count(shown)
    for g in range(closed):
        assert count(masks.group(g)) <= count(live.shown(g))
    texts = outputs(shown)
    assert any(t.startswith("[tool output masked:") for t in texts)  # the long outputs are masked
    assert sum(t.startswith("collected item") for t in texts) >= 12  # the short ones stay as they are


@pytest.mark.parametrize("strategy", ["summarize", "mask"])
async def test_recent_outputs_are_masked_rather_than_summarized_or_dropped(strategy):
    """The newest ``mask_keep_recent`` outputs stay verbatim, unless the next rung would take their groups whole:
    then masking them (calls and words kept, originals recallable) is the cheaper and less lossy way to the target."""
    history = tool_session("anthropic", 7, output_lines=120, request_every=100)
    manager, _ = make({"compaction_strategy": strategy})
    provider = FakeProvider()
    views = await replay(manager, history, provider, budget=BUDGET)
    assert not provider.requests and not manager.state.segments and manager.state.boundary == 0
    last = views[-1]
    texts = outputs(last)
    assert len(texts) == 7 and len([t for t in texts if t.startswith("[tool output masked:")]) >= 3
    assert not texts[-1].startswith("[tool output masked:")  # the newest output is still verbatim
    assert "pytest tests/test_0.py -q" in json.dumps(last)  # the calls of masked groups stay


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab \t\r\n\x0b\u2028", max_size=1200))
def test_a_placeholder_quotes_the_first_line_with_something_on_it(text: str) -> None:
    # read from a growing head: the answer must be the one splitting the whole output gives
    assert first_line(text) == next((s.strip() for s in text.splitlines() if s.strip()), "")


# --- Wide parallel groups: masking stays linear in the group's size ----------------------------------------------


class CountingList(list):
    """A list that counts reads by index and items iterated (the work of finding where each shown message and
    block is stored)."""

    reads = 0

    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        if isinstance(key, int):
            CountingList.reads += 1
        return super().__getitem__(key)

    def __iter__(self):  # type: ignore[no-untyped-def]
        for item in super().__iter__():
            CountingList.reads += 1
            yield item


def wide_group(shape: str, n: int) -> list[dict]:
    calls = [(f"c{i}", {"command": f"pytest tests/test_{i}.py"}) for i in range(n)]
    out = [{"role": "user", "content": "Run every test file."}]
    if shape == "openai":
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": cid, "type": "function", "function": {"name": "bash", "arguments": json.dumps(args)}}
                    for cid, args in calls
                ],
            }
        )
        out += [
            {"role": "tool", "tool_call_id": cid, "content": LOG_LINE.format(i=i) * 8}
            for i, (cid, _) in enumerate(calls)
        ]
    else:
        uses = [{"type": "tool_use", "id": cid, "name": "bash", "input": args} for cid, args in calls]
        results = [
            {"type": "tool_result", "tool_use_id": cid, "content": LOG_LINE.format(i=i) * 8}
            for i, (cid, _) in enumerate(calls)
        ]
        out += [{"role": "assistant", "content": uses}, {"role": "user", "content": results}]
    return [*out, {"role": "assistant", "content": "All pass."}, {"role": "user", "content": "Thanks."}]


def copied(messages: list[dict]) -> list[dict]:
    """The group as a view would show it after sanitizing: new message and block objects, same content."""
    return [
        {**m, "content": [dict(b) for b in m["content"]]} if isinstance(m.get("content"), list) else dict(m)
        for m in messages
    ]


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
@pytest.mark.parametrize("sanitized", [False, True])
def test_masking_a_wide_parallel_group_is_linear_in_its_calls(
    shape: str, sanitized: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finding each shown message's (and block's) stored place once per lookup scanned the group: O(N²) for one
    assistant turn of N parallel calls (24,000 calls took 5 s on the event loop). Counted, not timed."""
    from amplifier_module_context_summarize.compaction.view import masking

    reads: dict[int, int] = {}
    scanned: dict[int, int] = {}
    views: dict[int, list] = {}
    real_result_ids = masking.result_ids
    for n in (400, 1_600):
        manager = create_manager({"max_tokens": 10**7, "mask_min_chars": 100, "mask_keep_recent": 0})
        history = manager.history
        for message in wide_group(shape, n):
            history.append(message)
        plain = masking.Masks(history, manager.mask_settings)._masked(1, history.shown(1))[0]
        if sanitized:
            shown = copied(history.shown(1))
            monkeypatch.setattr(history, "shown", lambda g, shown=shown: shown)
        calls = [0]

        def counting(message, calls=calls):  # type: ignore[no-untyped-def]
            calls[0] += 1
            return real_result_ids(message)

        monkeypatch.setattr(masking, "result_ids", counting)
        history.messages = CountingList(history.messages)
        for message in history.messages[:]:
            if isinstance(message.get("content"), list):
                message["content"] = CountingList(message["content"])
        CountingList.reads = 0
        masked, changed = masking.Masks(history, manager.mask_settings)._masked(1, history.shown(1))
        reads[n], scanned[n], views[n] = CountingList.reads, calls[0], masked
        assert changed and masked == plain, "the same placeholders and handles, sanitized or not"
    for count in (reads, scanned):
        assert count[1_600] <= 4 * count[400] + 16, f"{count}: quadratic in the group's calls"


async def test_a_one_line_output_is_masked_as_one_line_not_1_lines():
    """Minified JSON or a long log line is one line: the placeholder says ``1 line``."""
    history = tool_session("anthropic", 30, output_lines=100)
    for message in history:  # every output on one line
        if isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    block["content"] = block_text(block).replace("\n", " ")
    manager, _ = make({"max_tokens": WIDE})
    views = await replay(manager, history, FakeProvider(), budget=WIDE)
    masked = [t for t in outputs(views[-1]) if t.startswith("[tool output masked:")]
    assert masked and all(" chars, 1 line; " in t for t in masked)


_ARG_TEXT = st.text(alphabet=st.sampled_from('ab "\\\n\x01é☃\ud800'), max_size=40) | st.builds(
    lambda c, n: c * n, st.sampled_from(["a", '"', "\x01", "é"]), st.integers(0, 900)
)


@settings(max_examples=400, deadline=None)
@given(
    st.dictionaries(
        _ARG_TEXT | st.integers(-3, 3),
        _ARG_TEXT | st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.lists(_ARG_TEXT, max_size=3),
        max_size=5,
    ),
    st.sampled_from([0, 2, 20, 80, 600, 601, 2_000]),
)
def test_whether_call_arguments_are_long_enough_to_clip_is_their_json_length_however_it_is_settled(
    args: dict, limit: int
) -> None:
    """The bounds either side of the JSON's length (used so most arguments are not written out) never change the
    answer: escapes (up to six characters for one), words, numbers, nested values, keys that are not strings."""
    assert json_longer_than(args, limit) is (len(canonical_json(args)) > limit)


def _limit_counted_from_the_first(history: History, keep: int) -> int:
    """``Masks.limit`` by its definition: the group holding the newest ``keep`` outputs (the open group's first)."""
    closed = history.last_cuttable
    open_outputs = len(result_ids_in(history, closed)) if history.groups else 0
    if keep <= open_outputs:
        return closed
    remaining = keep - open_outputs
    outputs = [g for g in range(closed) for _ in result_ids_in(history, g)]
    return 0 if len(outputs) <= remaining else outputs[-remaining]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=0, max_size=200), st.integers(0, 7), st.integers(1, 4))
def test_the_mask_limit_keeps_the_newest_outputs_however_far_back_they_are(
    outputs_per_turn: list[int], keep: int, asks: int
) -> None:
    """Outputs rare or dense, near the newest group or far back (past the groups read back from the newest),
    the limit is the group holding the newest ``keep`` outputs, asked once or again as the history grows."""
    history = History(TokenCounter(), "fp")
    masks = Masks(history, MaskSettings(keep_recent=keep))
    step = max(len(outputs_per_turn) // asks, 1)
    for i, count in enumerate(outputs_per_turn):
        calls = [
            {"id": f"c{i}_{k}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
            for k in range(count)
        ]
        history.append({"role": "user", "content": f"turn {i}"})
        history.append({"role": "assistant", "content": "ok", **({"tool_calls": calls} if calls else {})})
        for call in calls:
            history.append({"role": "tool", "tool_call_id": call["id"], "content": "out"})
        if i % step == 0:
            assert masks.limit() == _limit_counted_from_the_first(history, keep)
    assert masks.limit() == _limit_counted_from_the_first(history, keep)


def test_a_resumed_historys_mask_limit_reads_its_newest_groups_only(monkeypatch: pytest.MonkeyPatch) -> None:
    history = History(TokenCounter(), "fp")
    for i in range(2_000):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "run", "arguments": "{}"}}
        history.append({"role": "user", "content": f"turn {i}"})
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
        history.append({"role": "tool", "tool_call_id": call["id"], "content": "out"})
    read: list[int] = []
    monkeypatch.setattr(masking, "result_ids_in", lambda h, g: read.append(g) or result_ids_in(h, g))
    limit = Masks(history, MaskSettings(keep_recent=5)).limit()
    assert limit == _limit_counted_from_the_first(history, 5) > 0
    assert len(read) <= 16, "the groups before the newest outputs are not read (old: all 4,000 of them)"
