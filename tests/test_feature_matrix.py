"""The feature matrix (issue 43): every break of that issue sat where two features meet, and each feature's tests
tested it alone. Here Hypothesis draws sessions across the whole matrix and checks every promise after every
request, together:

* strategy (``summarize``, ``extractive``, ``mask``, ``truncate``) × mode (background, blocking) × summarizer (the
  session's provider passed with the request, a direct backend, the provider's own compaction (``native``, against
  its HTTP stand-in), offline);
* steering: standing instructions, a focus (by ``compact(focus=)`` or by a ``pre_compact`` hook), a denying hook,
  pins on every message kind (``metadata.pin`` on user, assistant and tool messages; ``pin_patterns`` in a request,
  in a tool output, and on a ``<system-reminder>`` in every request), context a ``post_compact`` hook injects in any
  script (ASCII, CJK, emoji, a lone surrogate);
* pressure: large new outputs (spilled to files past ``spill_threshold_tokens``, or not), tiny budgets, merges (a
  small summary room), a summarizer that stalls (and one that swallows its cancellation);
* resume in a new process: a fresh manager and hook registry over the same SQLite file, given the history by
  ``set_messages`` (as the existing resume tests do; a subprocess per example would cost seconds each); and a
  resume with nothing stored (an empty store), whose first plan reads upper bounds for the older groups' counts.

The promises (``PROMISES``) after every request: the view is valid and encodes on the wire; it fits the budget;
every pin is in it verbatim or was reported dropped; every summarizer prompt (merges included) carries the guidance
in force, and what the guidance keeps is in every view a summary stands in; the working set, once a view has it,
is in every summary the state shows (a request's copy fitted to a budget its newest messages alone fill gives it up
last of the summary); one ``post_compact`` per ``pre_compact``; no request waits past its deadline
(a virtual clock: stalls cost no real time); the resumed view is the live one, injected context included; a resume
with nothing stored shows the view exact counts give; and a request's tokenizer work is bounded by what is new and
what it shows, never by the history's length.

Hooks are registered on the real amplifier-core hook registry. Runs:

* ``pytest tests/test_feature_matrix.py``: the CI profile (``CI_EXAMPLES`` examples) and, marked ``slow``, the long
  one (``SLOW_EXAMPLES``).
* Every broken promise fails the example. ``FEATURE_MATRIX_PROMISE=<name>`` checks one promise only: Hypothesis
  then shrinks to the smallest session that breaks it. ``FEATURE_MATRIX_LOG=file.jsonl`` writes one line per
  example (its scenario, the promises it broke) for counting. The draws are the same on every run (a red suite
  is a change's doing); ``FEATURE_MATRIX_EXPLORE=1`` draws new ones each run, to hunt the next seam.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from amplifier_core.models import HookResult
from amplifier_core.testing import MockCoordinator
from feature_matrix_kit import (
    GuidedBackend,
    GuidedModel,
    GuidedProvider,
    Tokenizer,
    native_backend,
    spill_problems,
    strings,
    text_chars,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from virtual_clock import VirtualClock

from amplifier_module_context_summarize import create_manager
from amplifier_module_context_summarize.core.invariants import check_view as view_rules
from amplifier_module_context_summarize.core.state import SUMMARY_MARKER
from amplifier_module_context_summarize.testing import FILLER, EventRecorder, tool_call, tool_result
from amplifier_module_context_summarize.testing.replay import request_due
from amplifier_module_context_summarize.working_set.fold import HEADING

CI_EXAMPLES = 40
SLOW_EXAMPLES = 200

INSTRUCTIONS = "Always keep ORD-7731"
GUIDED_FACT = "The refund id is ORD-7731 and it is pending."
FOCUS = "keep MIG-4410"
FOCUS_FACT = "The migration window is MIG-4410 on Friday."
COMPACT_FOCUS = "keep INV-5520"
REMINDER = "<system-reminder>Keep the todo list current.</system-reminder>"
RULES = "RULES.md"
DEADLINE_S = 2.0
SLACK_S = 0.5
"""A request may pass its deadline by the loop's own steps, never by a summarizer's."""

INJECTED = {
    "ascii": "PLAN: 1) migrate the schema 2) rerun the suite",
    "cjk": "计划：先迁移数据库结构，再运行全部测试，最后更新部署文档。" * 100,
    "emoji": "PLAN 🚀: ship the parser 🧪 then the docs 📄",
    "surrogate": "PLAN: ship the parser \ud83d",
}
PIN_KINDS = ("user_meta", "assistant_meta", "tool_meta", "pattern_user", "pattern_tool")
SHAPES = ("openai", "anthropic", "amplifier", "orchestrator", "streaming")

WORK_PER_NEW_CHAR = 4
WORK_FLOOR = 2_000
"""A request that compacts nothing tokenizes at most this: each new character a few times and a constant, never
what it already counted (measured on 5818ea8 without pins: at most 0.55 characters a new character, 293 at most a
request, at 60 turns; with a ``<system-reminder>`` pattern every marked message again: 21,460 a request)."""


# ---------------------------------------------------------------------------------------------- the matrix


@dataclass(frozen=True)
class Scenario:
    strategy: str
    background: bool
    summarizer: str
    instructions: bool
    focus_by: str | None
    deny: bool
    pins: frozenset[str]
    reminders: bool
    inject: str | None
    budget: int
    summary_ratio: float
    summary_max_tokens: int
    pin_ratio: float
    turns: int
    large: dict[int, int]
    shape_seed: int
    stall: str | None
    stall_every: int
    compact_at: int
    spill: int | None = None
    """``spill_threshold_tokens``; None: spilling off."""
    max_input: int | None = None
    """``summarizer.max_input_tokens``; small, a span is cut into fragments whose summaries are folded, and past four
    inputs an in-band summary is stood in for by the extractive one while the LLM's is written in the background
    (``compaction/run/stand_in.py``). None: the default."""

    @property
    def asks_llm(self) -> bool:
        return self.strategy == "summarize" and self.summarizer != "offline"

    @property
    def writes_summaries(self) -> bool:
        return self.strategy in ("summarize", "extractive")


@st.composite
def scenarios(draw: Any) -> Scenario:
    turns = draw(st.integers(5, 22))
    steering = draw(st.sampled_from([None, "hook", "compact", "deny"]))
    large = draw(st.dictionaries(st.integers(0, turns - 1), st.sampled_from([3_000, 12_000, 40_000]), max_size=4))
    return Scenario(
        strategy=draw(st.sampled_from(["summarize", "summarize", "extractive", "mask", "truncate"])),
        background=draw(st.booleans()),
        summarizer=draw(st.sampled_from(["session", "direct", "native", "offline"])),
        instructions=draw(st.booleans()),
        focus_by=steering if steering in ("hook", "compact") else None,
        deny=steering == "deny",
        pins=frozenset(draw(st.sets(st.sampled_from(PIN_KINDS)))),
        reminders=draw(st.integers(0, 3)) == 0,
        inject=draw(st.sampled_from([None, None, *INJECTED])),
        budget=draw(st.sampled_from([1_500, 3_000, 6_000, 12_000])),
        summary_ratio=draw(st.sampled_from([0.1, 0.3])),
        summary_max_tokens=draw(st.sampled_from([150, 600])),
        pin_ratio=draw(st.sampled_from([0.1, 0.2, 0.4])),
        turns=turns,
        large=large,
        shape_seed=draw(st.integers(0, len(SHAPES) - 1)),
        stall=draw(st.sampled_from([None, None, "hang", "swallow"])),
        stall_every=draw(st.integers(1, 3)),
        compact_at=draw(st.integers(1, turns)),
        spill=draw(st.sampled_from([None, None, 1_000, 2_500])),
        max_input=draw(st.sampled_from([None, None, 256, 600])),
    )


def pin_turn(kind: str, turns: int) -> int:
    return (1 + PIN_KINDS.index(kind)) % turns


def pin_text(kind: str) -> str:
    return f"PIN {kind}: every migration ships with a rollback script, and {RULES} says run make lint."


def session(s: Scenario) -> tuple[list[dict[str, Any]], list[int]]:
    """The history, and the indices of its pinned messages."""
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent."}]
    pinned: list[int] = []
    pins_at = {kind: pin_turn(kind, s.turns) for kind in s.pins}

    def add(message: dict[str, Any], pin: bool = False) -> None:
        if pin:
            pinned.append(len(history))
        history.append(message)

    for i in range(s.turns):
        here = {kind for kind, at in pins_at.items() if at == i}
        shape = SHAPES[(s.shape_seed + i) % len(SHAPES)]
        if "user_meta" in here:
            add({"role": "user", "content": pin_text("user_meta"), "metadata": {"pin": True}}, pin=True)
            add({"role": "assistant", "content": "Noted."})
        request = f"Request {i}: please look at src/part_{i}.py. " + FILLER * 3
        if "pattern_user" in here:
            request = pin_text("pattern_user")
        if s.reminders:
            request += "\n" + REMINDER
        add({"role": "user", "content": request}, pin="pattern_user" in here or s.reminders)
        call_id = f"call_{i}"
        add(tool_call(shape, call_id, "bash", {"command": f"cat src/part_{i}.py"}, text=f"Reading part {i}."))
        output = f"contents of src/part_{i}.py\n" + FILLER * 6
        if i in s.large:
            output = f"log of part {i}\n" + (FILLER * (s.large[i] // len(FILLER) + 1))[: s.large[i]]
        tool_pin = bool(here & {"tool_meta", "pattern_tool"})
        if tool_pin:
            output = pin_text("tool_meta" if "tool_meta" in here else "pattern_tool")
        result = tool_result(shape, call_id, output)
        if "tool_meta" in here:
            result["metadata"] = {"pin": True}
        add(result, pin=tool_pin)
        answer = f"Part {i} done: src/part_{i}.py reads fine. " + FILLER * 2
        if i == 1:
            answer += GUIDED_FACT
        if i == 2:
            answer += FOCUS_FACT
        if "assistant_meta" in here:
            add({"role": "assistant", "content": pin_text("assistant_meta"), "metadata": {"pin": True}}, pin=True)
        else:
            add({"role": "assistant", "content": answer})
    return history, pinned


def config(s: Scenario, store: Path) -> dict[str, Any]:
    patterns = [RULES] if s.pins & {"pattern_user", "pattern_tool"} else []
    if s.reminders:
        patterns.append("<system-reminder>")
    summarizer: dict[str, Any] = {"provider": "extractive"}
    if s.summarizer != "offline":  # the direct backend is passed to create_manager; the key is then unused
        summarizer = {"provider": "session", "max_retries": 0, "timeout_s": DEADLINE_S}
    if s.max_input is not None:
        summarizer["max_input_tokens"] = s.max_input
    cfg: dict[str, Any] = {
        "max_tokens": s.budget,
        "compaction_strategy": s.strategy,
        "background_compaction": s.background,
        "summarizer": summarizer,
        "compaction_deadline_s": DEADLINE_S,
        "safety_margin": 0,
        "storage_path": str(store),
        "summary_budget_ratio": s.summary_ratio,
        "summary_max_tokens": s.summary_max_tokens,
        "pin_budget_ratio": s.pin_ratio,
        "pin_patterns": patterns,
        "notify": False,
        "spill_path": str(store.parent / "spill") if s.spill is not None else "off",
    }
    if s.spill is not None:
        cfg["spill_threshold_tokens"] = s.spill
    if s.instructions:
        cfg["summary_instructions"] = INSTRUCTIONS
    return cfg


# ---------------------------------------------------------------------------------------------- one session

EVENTS = (
    "context:pre_compact",
    "context:post_compact",
    "context:compaction_postponed",
    "context:pins_dropped",
)


def hooks_for(s: Scenario) -> tuple[Any, EventRecorder]:
    """A real amplifier-core hook registry with the scenario's steering handlers and a recorder."""
    hooks = MockCoordinator().hooks
    recorder = EventRecorder()
    recorder.listen(hooks, *EVENTS)

    async def focus(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="modify", data={**data, "focus": FOCUS})

    async def deny(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="deny", reason="checkpoint first")

    async def inject(event: str, data: dict[str, Any]) -> HookResult:
        return HookResult(action="inject_context", context_injection=INJECTED[s.inject or "ascii"])

    if s.focus_by == "hook":
        hooks.register("context:pre_compact", focus, priority=10, name="focus")
    if s.deny:
        hooks.register("context:pre_compact", deny, priority=10, name="deny")
    if s.inject:
        hooks.register("context:post_compact", inject, priority=10, name="inject")
    return hooks, recorder


@dataclass
class Finding:
    promise: str
    at: int
    detail: str


@dataclass
class Run:
    """What one session broke: the first finding per promise."""

    scenario: Scenario
    findings: dict[str, Finding] = field(default_factory=dict)

    def broke(self, promise: str, at: int, detail: str) -> None:
        self.findings.setdefault(promise, Finding(promise, at, detail[:400]))


class Manager:
    """One manager of the scenario (live or resumed) with what it is driven by."""

    def __init__(self, s: Scenario, store: Path, model: GuidedModel) -> None:
        self.hooks, self.recorder = hooks_for(s)
        backend = None
        if s.strategy == "summarize" and s.summarizer in ("direct", "native"):
            backend = GuidedBackend(model) if s.summarizer == "direct" else native_backend(model)
        self.manager = create_manager(config(s, store), hooks=self.hooks, backend=backend)
        self.provider = GuidedProvider(model) if s.summarizer == "session" else None

    async def request(self, budget: int) -> list[dict[str, Any]]:
        return await self.manager.get_messages_for_request(token_budget=budget, provider=self.provider)

    def count(self, event: str) -> int:
        return len(self.recorder.payloads(event))


async def play(s: Scenario, workdir: Path, clock: VirtualClock, tokenizer: Tokenizer) -> Run:
    run = Run(s)
    history, pinned = session(s)
    store = workdir / "summaries.db"
    model = guided_model(s)
    live = Manager(s, store, model)
    manager = live.manager
    had_working_set = False
    added_chars = 0
    for index, message in enumerate(history):
        await manager.add_message(message)
        added_chars += text_chars(message)
        if compact_due(s, history, index):
            await settle(manager)
            before = len(model.calls)
            await manager.compact(focus=COMPACT_FOCUS)
            for call in model.calls[before:]:
                if COMPACT_FOCUS not in call.guidance:
                    run.broke("guidance", index, f"compact(focus=) prompt without the focus: {call.guidance!r}")
        if not request_due(history, index, at_end=True):
            continue
        calls_before = len(model.calls)
        posts_before, pres_before = live.count("context:post_compact"), live.count("context:pre_compact")
        busy = manager.background.running  # a summary written in the background meanwhile is not this request's work
        started, work_before = clock.now, tokenizer.chars
        view = await live.request(s.budget)
        waited, work = clock.now - started, tokenizer.chars - work_before
        with tokenizer.pause():
            check_view(run, s, live, view, history[: index + 1], pinned, index)
            own = live.manager.view.shown().summary
            had_working_set = check_working_set(run, view, own, index, had_working_set)
            check_guidance(run, s, model.calls[calls_before:], index, in_compact=False)
            check_events(run, live, index)
            compacted = busy or manager.background.running or len(model.calls) != calls_before
            compacted |= (live.count("context:post_compact"), live.count("context:pre_compact")) != (
                posts_before,
                pres_before,
            )
            check_work(run, work, added_chars, compacted, index, manager)
        added_chars = 0
        if waited > DEADLINE_S + SLACK_S:
            run.broke("deadline", index, f"request waited {waited:.1f} virtual s (deadline {DEADLINE_S} s)")
    with tokenizer.pause():
        final = await settle(manager, live, s.budget)
        check_events(run, live, len(history))
        await manager.close()
        await check_resume(run, s, store, final, history)
        await check_cold_resume(run, s, workdir, history)
    return run


def compact_due(s: Scenario, history: list[dict[str, Any]], index: int) -> bool:
    """The user calls ``compact(focus=)`` before the request after their ``compact_at``-th message."""
    if s.focus_by != "compact" or index + 1 == len(history) or not request_due(history, index):
        return False
    return sum(m["role"] == "user" for m in history[: index + 1]) == s.compact_at


def guided_model(s: Scenario) -> GuidedModel:
    return GuidedModel(stall_every=s.stall_every if s.stall else 0, stall_s=1_000.0, swallow=s.stall == "swallow")


async def settle(manager: Any, live: Manager | None = None, budget: int = 0) -> list[dict[str, Any]]:
    """Let background summaries land (virtual time), then the view the session sends next."""
    view: list[dict[str, Any]] = []
    for _ in range(4):
        flight = manager.background.flight
        if flight is not None and not flight.task.done():
            await asyncio.wait({flight.task})
        if live is None:
            return view
        view = await live.request(budget)
        if not manager.background.running:
            break
    return view


# ---------------------------------------------------------------------------------------------- the promises


def check_view(
    run: Run, s: Scenario, live: Manager, view: list[dict[str, Any]], history: list, pinned: list[int], at: int
) -> None:
    problems = view_rules(view)
    if problems:
        run.broke("valid", at, str(problems))
    try:
        json.dumps(view, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        run.broke("wire", at, f"the view does not encode: {exc}")
    for problem in spill_problems(view, history, s.spill is not None):
        run.broke("spill", at, problem)
    tokens = live.manager.counter.count_messages(view)
    if tokens > s.budget:
        run.broke("fits", at, f"{tokens} tokens over the budget {s.budget}")
    shown = strings(view)
    dropped = {i for p in live.recorder.payloads("context:pins_dropped") for i in p.get("dropped_indices", ())}
    for index in pinned:
        if index >= len(history):
            break
        text = pinned_text(history[index])
        if index not in dropped and not any(text in t for t in shown):
            run.broke("pins", at, f"pin #{index} ({history[index]['role']}) neither shown verbatim nor reported")
    summary = next((m for m in view if is_summary(m)), None)
    if summary is None:
        return
    for fact, named in kept_facts(s):
        where = next((i for i, m in enumerate(history) if named in str(m.get("content"))), None)
        if where is not None and not any(fact in t for t in shown):
            run.broke("kept", at, f"{fact!r} (message #{where}) is in neither the summary nor the rest of the view")


def kept_facts(s: Scenario) -> list[tuple[str, str]]:
    """(fact, its id) the guidance in force keeps in every summary: the instructions', a hook's focus's."""
    if not s.writes_summaries:
        return []
    facts = [(GUIDED_FACT, "ORD-7731")] if s.instructions else []
    if s.focus_by == "hook":
        facts.append((FOCUS_FACT, "MIG-4410"))
    return facts


def pinned_text(message: dict[str, Any]) -> str:
    """The pinned text a view must carry verbatim: the message's own words."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    texts = [s for s in strings(content) if RULES in s or "PIN " in s]
    return texts[0] if texts else json.dumps(content)


def is_summary(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(SUMMARY_MARKER)


def check_working_set(run: Run, view: list[dict[str, Any]], own: dict[str, Any] | None, at: int, had: bool) -> bool:
    """The working set, once shown, is in every summary the state shows. A request whose newest messages alone
    exceed its budget sends a fitted copy of the summary (``docs/recall.md``, the working set): the narrative
    gives way first, the working set last of the summary, then the summary itself; the view fitting the budget
    comes first (a request over the context window fails), so such a copy is not held to it."""
    summary = next((m for m in view if is_summary(m)), None)
    if summary is None or summary != own:
        return had
    has = HEADING in summary["content"]
    if had and not has:
        run.broke("working_set", at, "a view with a summary lost the working set an earlier view had")
    return had or has


def check_guidance(run: Run, s: Scenario, calls: list[Any], at: int, in_compact: bool) -> None:
    for call in calls:
        wanted = [INSTRUCTIONS] if s.instructions else []
        if s.focus_by == "hook":
            wanted.append(FOCUS)
        missing = [w for w in wanted if w not in call.guidance]
        if missing:
            kind = "merge" if call.merge else "summary"
            run.broke("guidance" + ("_merge" if call.merge else ""), at, f"{kind} prompt without {missing}")


def check_work(run: Run, work: int, added: int, compacted: bool, at: int, manager: Any) -> None:
    if compacted:
        return  # a compaction reads its span once (amortized over the messages it covers)
    if work > WORK_PER_NEW_CHAR * added + WORK_FLOOR:
        size = sum(text_chars(m) for m in manager.history.messages)
        run.broke("linear", at, f"tokenized {work:,} chars; new since the last request {added:,}, history {size:,}")


def check_events(run: Run, live: Manager, at: int) -> None:
    """One post per pre: after a request, only a compaction still under way in the background owes its post."""
    pres, posts = live.count("context:pre_compact"), live.count("context:post_compact")
    postponed = live.count("context:compaction_postponed")
    flight = live.manager.background.flight
    owed = int(flight is not None and flight.owes)
    if not posts + postponed <= pres <= posts + postponed + owed:
        run.broke("events", at, f"{pres} pre_compact, {posts} post_compact, {postponed} postponed, {owed} owed")


async def check_resume(run: Run, s: Scenario, store: Path, live_view: list, history: list) -> None:
    resumed = Manager(s, store, guided_model(s))  # the new process's summarizer behaves as the old one's
    try:
        await resumed.manager.set_messages(history)
        view = await resumed.request(s.budget)
    finally:
        await resumed.manager.close()
    if view != live_view:
        live_texts = [str(m.get("content"))[:60] for m in live_view]
        texts = [str(m.get("content"))[:60] for m in view]
        run.broke("resume", len(history), f"live {len(live_view)} msgs {live_texts}; resumed {len(view)} {texts}")


async def check_cold_resume(run: Run, s: Scenario, workdir: Path, history: list) -> None:
    """A resume with nothing stored (a new process, an empty store) plans its first request on upper bounds for the
    older groups' counts, and does not mask the groups it summarizes where no reader needs it: its first view is the
    one exact counts give (the bounds turned off right after ``set_messages``)."""
    s = replace(s, budget=s.budget // 3)  # a history several budgets long: the older groups get bounds
    views = []
    for exact in (False, True):
        resumed = Manager(s, workdir / f"cold-{'exact' if exact else 'bounded'}.db", guided_model(s))
        try:
            await resumed.manager.set_messages(history)
            if exact:
                resumed.manager.history.stop_estimating()
            views.append(await resumed.request(s.budget))
        finally:
            await resumed.manager.close()
    bounded, exact_view = views
    if bounded != exact_view:
        texts = [str(m.get("content"))[:60] for m in bounded]
        exact_texts = [str(m.get("content"))[:60] for m in exact_view]
        run.broke("cold_resume", len(history), f"bounded {len(bounded)} msgs {texts}; exact {exact_texts}")


def pattern_pins(s: Scenario) -> bool:
    return s.reminders or bool(s.pins & {"pattern_user", "pattern_tool"})


PROMISES = (
    "valid", "wire", "fits", "pins", "kept", "guidance", "guidance_merge", "working_set", "events", "deadline",
    "resume", "cold_resume", "linear", "spill",
)  # fmt: skip


def judge(run: Run) -> None:
    """Every promise broken in this session fails it (``FEATURE_MATRIX_PROMISE``: only that one, so Hypothesis
    shrinks to the smallest session that breaks it)."""
    only = os.environ.get("FEATURE_MATRIX_PROMISE")
    broken = {p: f for p, f in run.findings.items() if not only or p == only}
    if log := os.environ.get("FEATURE_MATRIX_LOG"):  # one line per example: what the matrix counts for the notes
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps({"scenario": repr(run.scenario), "broken": sorted(run.findings)}) + "\n")
    assert not broken, "\n".join(f"{p} at message {f.at}: {f.detail}" for p, f in broken.items())


# ---------------------------------------------------------------------------------------------- the tests


def run_scenario(s: Scenario) -> Run:
    with pytest.MonkeyPatch.context() as monkeypatch, tempfile.TemporaryDirectory() as workdir:
        tokenizer = Tokenizer()

        async def go() -> Run:
            clock = VirtualClock()
            clock.install(monkeypatch)
            with tokenizer.installed(monkeypatch):
                return await play(s, Path(workdir), clock, tokenizer)

        return asyncio.run(go())


EXPLORE = bool(os.environ.get("FEATURE_MATRIX_EXPLORE"))
"""Draw new sessions on every run (hunting the next seam); by default the draws are the same on every run, so a
red suite means a change broke a promise, not that this run happened on an old break."""
MATRIX = settings(
    deadline=None,
    derandomize=not EXPLORE,
    database=None if not EXPLORE else settings.default.database,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings(MATRIX, max_examples=CI_EXAMPLES)
@given(scenarios())
def test_features_hold_their_promises_together(scenario: Scenario) -> None:
    judge(run_scenario(scenario))


@pytest.mark.slow
@settings(MATRIX, max_examples=SLOW_EXAMPLES)
@given(scenarios())
def test_features_hold_their_promises_together_at_length(scenario: Scenario) -> None:
    judge(run_scenario(scenario))


def found(**drawn: Any) -> Scenario:
    """A session fresh draws once broke, kept as a test: the settings the ones found so far share, then its own."""
    shared: dict[str, Any] = {
        "strategy": "summarize", "focus_by": None, "deny": False, "pins": frozenset(), "reminders": True,
        "summary_ratio": 0.1, "summary_max_tokens": 150, "shape_seed": 0, "stall": None, "stall_every": 1,
        "compact_at": 1,
    }  # fmt: skip
    return Scenario(**{**shared, **drawn})


KNOWN_RESUME_SEAM = found(
    background=False,
    summarizer="session",
    instructions=True,
    inject="cjk",
    budget=1500,
    pin_ratio=0.2,
    turns=18,
    large={2: 40000, 1: 3000},
)
"""Found by fresh draws (issue 48's third stop): the live session stalled at boundary 50 (its reach: protected tail
at 50, first cut at 51; the span to the last allowed cut, 53, too small for an LLM summary, so the plan masked and
gained nothing), while the resumed one, holding no stall, found the next user message had closed a group: the
span widened to 54 was worth a summary (1,439 -> 1,121 tokens). The stall's reach now holds where the first
summary would end (``strategies.summary_end``), so the live session compacts there too."""


def test_a_stalled_session_and_its_resume_show_the_same_view() -> None:
    assert "resume" not in run_scenario(KNOWN_RESUME_SEAM).findings


KNOWN_SPILL_CLIP_SEAM = found(
    background=False,
    summarizer="offline",
    instructions=False,
    inject="cjk",
    budget=1500,
    pin_ratio=0.4,
    turns=5,
    large={0: 3000, 1: 3000, 3: 12000},
    spill=1000,
)
"""Found by fresh draws (issue 48's fourth stop, on a8d8bb5 too): the newest group's spill preview (1,370
characters) was clipped to fit the 1,500-token budget (``RequestView._fit`` -> ``clip_tool_outputs``, limit 685),
and ``clip_middle``'s head (342 characters) ended inside the preview's ``File:`` line: the view named a path cut
short, a file that does not exist. A preview now names its file on its second line, and a clip keeps its first two
lines whole (``core.clip.whole_head``)."""


def test_a_clipped_spill_preview_never_names_a_path_cut_short() -> None:
    assert "spill" not in run_scenario(KNOWN_SPILL_CLIP_SEAM).findings


KNOWN_COLD_RESUME_SEAM = found(
    background=True,
    summarizer="session",
    instructions=False,
    inject=None,
    budget=6000,
    pin_ratio=0.1,
    turns=5,
    large={0: 3000, 1: 40000},
)
"""Found by the cold-resume promise's first slow run (issue 48's fifth stop; on 933f0b6 too): resumed with nothing
stored at a third of the budget, the oldest counted group held a 7,655-token output and ``Masks.limit`` was 0 (too
few outputs to mask any), so the first plan's horizon counted it whole and kept the bounds; the plan then masked it
anyway (a summary would have taken its group whole) and the exact path fitted by masking alone, while the bounded
path, reading the older groups' bounds, summarized. The horizon now measures the newest groups masked as far as any
plan may mask them (``compaction.run.horizon``)."""


def test_a_cold_resume_with_a_huge_output_the_plan_masks_shows_the_exact_view() -> None:
    assert "cold_resume" not in run_scenario(KNOWN_COLD_RESUME_SEAM).findings


KNOWN_FOCUS_PREFETCH_SEAM = found(
    background=False,
    summarizer="session",
    instructions=False,
    focus_by="compact",
    inject=None,
    budget=1500,
    pin_ratio=0.1,
    turns=13,
    large={},
    stall="hang",
    stall_every=3,
    compact_at=13,
)
"""Found by fresh draws (issue 48's sixth stop; on bef32a0 too): ``compact(focus=...)`` first let the summary the
last request had started writing ahead land (``Prefetcher.drain``), so that summary's calls, written without the
focus, ran inside the focused compaction, and a call that hung would have spent the deadline its own summaries
share. A summary written without the focus is never served for it, so a focused compaction now cancels it."""


def test_a_focused_compaction_does_not_wait_on_a_summary_written_ahead_without_its_focus() -> None:
    assert "guidance" not in run_scenario(KNOWN_FOCUS_PREFETCH_SEAM).findings


KNOWN_COLD_STAND_IN_SEAM = found(
    background=True,
    summarizer="session",
    instructions=False,
    inject=None,
    budget=1500,
    pin_ratio=0.1,
    turns=7,
    large={1: 3000},
    max_input=600,
)
"""Found by fresh draws (issue 48's sixth stop; on bef32a0 too), not fixed yet: resumed with nothing stored at a
third of the budget, the first plan summarizes groups 0-21 either way, but whether a request writes that summary
extractively now and the LLM's later (``Writer.STAND_IN``: the span past ``stand_in_above``, 4 x
``max_input_tokens`` = 2,400 here) is decided on the span's tokens, and with the older groups' bounds the span
passes it while on exact counts it does not: the bounded first view shows the stand-in (963 characters, no call),
the exact one the LLM's summary (574 characters, 5 calls). ``first_plan_horizon`` checks that the bounds cannot move
the cut; it does not check this threshold. Counting exactly whenever the counted groups cannot show the span past it
would make the LLM path's cold first request count far more of a long history (its horizon is 4 budgets; the
threshold is 4 x max_input_tokens), so the fix needs the horizon widened for LLM summarizers, measured with
``bench``'s cold LLM line."""


@pytest.mark.xfail(strict=True, reason="a known seam: the stand-in threshold is read on bounds (see its docstring)")
def test_a_cold_resume_decides_a_stand_in_as_exact_counts_would() -> None:
    assert "cold_resume" not in run_scenario(KNOWN_COLD_STAND_IN_SEAM).findings
