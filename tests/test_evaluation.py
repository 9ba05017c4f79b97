"""The evaluation harness: corpus loading, scoring, strategies, record/replay and the ``eval`` command."""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path

import pytest

from amplifier_module_context_summarize.backends.base import Completion
from amplifier_module_context_summarize.cli.progress import make_progress
from amplifier_module_context_summarize.core.history import History
from amplifier_module_context_summarize.core.invariants import check_view
from amplifier_module_context_summarize.core.tokens import TokenCounter
from amplifier_module_context_summarize.evaluation import cli
from amplifier_module_context_summarize.evaluation.cassette import Cassette, CassetteBackend, CassetteMiss
from amplifier_module_context_summarize.evaluation.loader import CorpusError, Probe, load_corpus
from amplifier_module_context_summarize.evaluation.models import ModelSpec
from amplifier_module_context_summarize.evaluation.prompts import load_eval_prompts
from amplifier_module_context_summarize.evaluation.reference import coverage, reference_view
from amplifier_module_context_summarize.evaluation.report import (
    console_summary,
    markdown,
    probe_scores,
    summarize_runs,
    write_results,
)
from amplifier_module_context_summarize.evaluation.retention import GroupArtifacts, RetentionTracker, bucket
from amplifier_module_context_summarize.evaluation.runner import ProbeResult, Run, Settings, evaluate, replay_session
from amplifier_module_context_summarize.evaluation.scoring import (
    DIMENSIONS,
    Judge,
    grade_from,
    key_score,
    parse_dimensions,
    parse_grade,
    view_text,
)
from amplifier_module_context_summarize.evaluation.strategies import STRATEGIES, make_manager
from amplifier_module_context_summarize.manager import SUMMARY_MARKER
from amplifier_module_context_summarize.testing import (
    FILLER,
    EventRecorder,
    mixed_history,
    replay,
    tool_call,
    tool_result,
)
from amplifier_module_context_summarize.working_set.fold import named_files

BUDGET = 3000
LLM = ModelSpec("anthropic", "fake-model")


class FakeBackend:
    """Deterministic stand-in for a model: the reply depends only on the prompt."""

    name = "anthropic"
    model = "fake-model"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider=None) -> Completion:
        self.calls += 1
        digest = hashlib.sha256(prompt.encode()).hexdigest()
        if "grade answers" in system:
            scores = {d: (int(digest, 16) >> (3 * i)) % 6 for i, d in enumerate(DIMENSIONS)}
            return Completion(json.dumps({**scores, "reason": "fake"}), 50, 10)
        if "Question:" in prompt:
            return Completion(f"answer {digest[:6]}: {prompt[-60:]}", 100, 20)
        return Completion(f"summary {digest[:8]}: {prompt[-300:-20]}", len(prompt) // 4, 90)


class RaisingBackend:
    name = "anthropic"
    model = "fake-model"

    async def complete(self, *args, **kwargs) -> Completion:
        raise AssertionError("a replay must not call the backend")


# ---------------------------------------------------------------- corpus


def write_session(folder: Path, name: str, messages: list[dict], probes=None, reference=None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    if probes is not None:
        (folder / f"{name}.probes.json").write_text(json.dumps(probes, indent=1), encoding="utf-8")
    if reference is not None:
        (folder / f"{name}.reference.json").write_text(json.dumps(reference, indent=1), encoding="utf-8")


def probe(pid: str, at: int, kind: str, keys: list[str]) -> dict:
    topic = keys[0] if keys else "it"
    return {"id": pid, "at": at, "kind": kind, "question": f"What about {topic}?", "answer": topic, "keys": keys}


def small_corpus(folder: Path) -> Path:
    """Two short sessions mixing all three tool shapes; the first has a reference summary."""
    first = mixed_history(24, size=8)
    last = len(first) - 1
    write_session(
        folder,
        "alpha",
        first,
        probes=[
            probe("a1", last, "artifact", ["src/module_0.py"]),
            probe("a2", last, "recall", ["Request 1: run the tests"]),
            probe("a3", last - 2, "continuation", ["Tests 22 pass"]),
            probe("a4", 60, "decision", ["module_3", "tests/test_4.py"]),
        ],
        reference={"source": "claude-code", "summary": "Read /repo/src/m1.py and src/module_0.py.", "boundary": 50},
    )
    second = mixed_history(15, size=8)
    write_session(folder, "beta", second, probes=[probe("b1", len(second) - 1, "recall", ["module_0"])])
    return folder


def test_loader_reads_sessions_probes_and_references(tmp_path):
    sessions = load_corpus(small_corpus(tmp_path))
    assert [s.name for s in sessions] == ["alpha", "beta"]
    alpha = sessions[0]
    assert alpha.reference is not None and alpha.reference.boundary == 50
    assert alpha.probes[0] == Probe(
        "a1",
        len(alpha.messages) - 1,
        "artifact",
        "What about src/module_0.py?",
        "src/module_0.py",
        ("src/module_0.py",),
    )
    assert [s.name for s in load_corpus(tmp_path, select=["beta"])] == ["beta"]
    assert len(load_corpus(tmp_path, limit=1)) == 1


def test_index_json_orders_sessions_and_must_match_files(tmp_path):
    small_corpus(tmp_path)
    (tmp_path / "index.json").write_text(json.dumps([{"name": "beta"}, {"name": "alpha"}]), encoding="utf-8")
    assert [s.name for s in load_corpus(tmp_path)] == ["beta", "alpha"]
    (tmp_path / "index.json").write_text(json.dumps([{"name": "gamma"}]), encoding="utf-8")
    with pytest.raises(CorpusError, match="index.json:1: lists session 'gamma' but there is no gamma.jsonl"):
        load_corpus(tmp_path)


@pytest.mark.parametrize(
    ("file", "text", "expected"),
    [
        ("s.jsonl", '{"role": "user", "content": "hi"}\n{"role": "user", "content": \n', "s.jsonl:2: malformed JSON"),
        ("s.jsonl", '{"role": "user", "content": "hi"}\n\n{"content": "x"}\n', "s.jsonl:3: message has no 'role'"),
    ],
)
def test_malformed_sessions_name_file_and_line(tmp_path, file, text, expected):
    (tmp_path / file).write_text(text, encoding="utf-8")
    with pytest.raises(CorpusError, match=expected):
        load_corpus(tmp_path)


@pytest.mark.parametrize(
    ("probes", "expected"),
    [
        (
            [probe("p1", 0, "recall", ["x"]), {"id": "p2", "at": 1, "kind": "recall", "question": "q", "answer": "a"}],
            r"s.probes.json:12: probe 1 \('p2'\): missing field 'keys'",
        ),
        ([probe("p1", 0, "trivia", ["x"])], r"s.probes.json:2: probe 0 \('p1'\): unknown kind 'trivia'"),
        ([probe("p1", 9, "recall", ["x"])], r"s.probes.json:2: .*'at' must be a message index in \[0, 2\)"),
        ([probe("p1", 0, "recall", [])], r"s.probes.json:2: .*'keys' must be a non-empty list"),
    ],
)
def test_bad_probes_name_file_and_line(tmp_path, probes, expected):
    write_session(tmp_path, "s", [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], probes)
    with pytest.raises(CorpusError, match=expected):
        load_corpus(tmp_path)


def test_bad_reference_and_orphan_files_are_named(tmp_path):
    messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    write_session(tmp_path, "s", messages, reference={"source": "claude-code", "summary": "x", "boundary": 7})
    with pytest.raises(CorpusError, match=r"s.reference.json:4: field 'boundary'"):
        load_corpus(tmp_path)
    (tmp_path / "s.reference.json").unlink()
    (tmp_path / "ghost.probes.json").write_text("[]", encoding="utf-8")
    with pytest.raises(CorpusError, match="ghost.probes.json:1: no session file ghost.jsonl"):
        load_corpus(tmp_path)


# ---------------------------------------------------------------- scoring


def test_key_score_on_hand_made_views():
    view = [
        {"role": "system", "content": "You are an agent."},
        {"role": "user", "content": f"{SUMMARY_MARKER}\nEdited `Django/DB/models/expressions.py`."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "pytest -k wrap"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "FAILED test_wrapper - KeyError: 'pk'"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/repo/where.py"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "class WhereNode:"}]},
    ]
    text = view_text(view)
    assert key_score(text, ["django/db/models/expressions.py"]) == (1.0, ["django/db/models/expressions.py"])
    assert key_score(text, ["pytest -k wrap", "KeyError: 'pk'", "/repo/where.py", "whereNODE"])[0] == 1.0
    assert key_score(text, ["compiler.py", "WhereNode"]) == (0.5, ["WhereNode"])
    assert key_score(view_text(view[:2]), ["WhereNode", "pytest"]) == (0.0, [])


def test_a_path_key_is_found_on_its_folders_folded_line_too():
    text = view_text([{"role": "user", "content": "Files read or used:\n- pydicom/ — read: dataset.py, multival.py"}])
    assert key_score(text, ["pydicom/multival.py", "pydicom/valuerep.py"]) == (0.5, ["pydicom/multival.py"])
    assert key_score(text, ["lib/multival.py", "multival"]) == (0.5, ["multival"])  # another folder: not named


def test_parse_grade():
    assert parse_grade('{"score": 4, "reason": "fine"}') == 4.0
    assert parse_grade('Sure. {"score": "5"}') == 5.0
    assert parse_grade("I give it 3 out of 5") == 3.0
    assert parse_grade("no idea") is None


async def test_judge_answers_from_the_view_and_grades():
    backend = FakeBackend()
    judge = Judge(backend, backend, load_eval_prompts())
    grade = await judge.grade(
        [{"role": "user", "content": "the file is a.py"}], Probe("p", 0, "recall", "Which?", "a.py", ("a.py",))
    )
    assert grade.error is None and grade.answer.startswith("answer ") and 0 <= grade.score <= 5
    assert backend.calls == 2


def test_reference_view_and_file_coverage():
    messages = mixed_history(6, size=2)
    reference = load_reference_like("Worked on src/m1.py and pytest tests/test_1.py", boundary=9)
    view = reference_view(messages, reference, at=len(messages) - 1)
    assert view[0]["role"] == "system" and view[1]["content"].startswith("Worked on")
    assert not check_view(view)
    paths = ["/home/u/p/lib/a.ex", "lib/a.ex", "/home/u/p/lib/b.ex", "/home/u/p/c.ex", "/tmp/x.log", "d.ex"]
    calls = [
        {"type": "tool_use", "id": str(i), "name": "Read", "input": {"file_path": path}} for i, path in enumerate(paths)
    ]
    results = [{"type": "tool_result", "tool_use_id": str(i), "content": "x"} for i in range(len(paths))]
    span = [{"role": "assistant", "content": calls}, {"role": "user", "content": results}]
    summary = "Changed lib/a.ex.\n- lib/ — read: b.ex\nAlso c.ex and the log in /tmp/."
    cover = coverage(summary, span)
    # one spelling per file, relative to the root the span shows (/home/u/p: /home/u/p/lib/a.ex beside lib/a.ex)
    assert cover.files == ["lib/a.ex", "lib/b.ex", "c.ex", "/tmp/x.log", "d.ex"]
    # named: by its path, or by its name on a line naming its folder; "/tmp/" alone names no file
    assert cover.found == ["lib/a.ex", "lib/b.ex", "c.ex"]
    assert cover.size_share == len(summary) / cover.span_chars


def load_reference_like(summary: str, boundary: int):
    from amplifier_module_context_summarize.evaluation.loader import Reference

    return Reference("claude-code", summary, boundary)


# ---------------------------------------------------------------- strategies


async def test_naive_resummarizes_from_scratch_and_keeps_views_valid():
    backend = FakeBackend()
    manager = make_manager("naive", BUDGET, LLM, backend)
    history = mixed_history(24, size=8)
    views = await replay(manager, history, budget=BUDGET)  # asserts every view is valid and fits
    assert manager.stats["compactions"] >= 2 and manager.stats["cache_hits"] == 0
    assert backend.calls >= manager.stats["compactions"]
    summaries = [m["content"] for v in views for m in v if str(m.get("content", "")).startswith(SUMMARY_MARKER)]
    assert len(set(summaries)) >= 2
    assert all(len(re.findall(r"summary [0-9a-f]{8}:", s)) == 1 for s in summaries)  # one summary, not a chain


async def test_strategies_compare_on_one_session(tmp_path):
    sessions = load_corpus(small_corpus(tmp_path), select=["alpha"])
    runs = await evaluate(sessions, Settings(BUDGET, STRATEGIES, ModelSpec("extractive")), None)
    by_name = {run.strategy: run for run in runs}
    assert set(by_name) == {*STRATEGIES, "claude-code"} and "summarize+recall" in STRATEGIES
    for name in STRATEGIES:
        run = by_name[name]
        records = run.records
        assert all(r.valid and r.view_tokens <= BUDGET for r in records)
        assert sum(r.compacted for r in records) >= 2
        assert any(r.probe_only for r in records)  # a3 is asked where no agent request falls
        assert run.turns == sum(1 for m in sessions[0].messages if m["role"] == "assistant")
        assert run.retention is not None and run.retention["measurements"] == sum(r.compacted for r in records)
        assert sum(r.provider_calls for r in records) == 0  # offline: the extractive summarizer
        written = sum(r.summaries for r in records)
        assert (written > 0) == (sum(r.extractive_tokens for r in records) > 0) == (name not in ("mask", "truncation"))
    assert by_name["claude-code"].retention is None
    # the working set keeps the early file: by its path, or (folded for room) by its name under its folder
    manager = make_manager("summarize", BUDGET, ModelSpec("extractive"), None)
    run = await replay_session(sessions[0], "summarize", manager, BUDGET)
    [summary] = [m["content"] for m in run.views["a1"][1] if str(m.get("content", "")).startswith(SUMMARY_MARKER)]
    assert named_files(summary, ["src/module_0.py"]) == ["src/module_0.py"]
    assert {p.probe: p.key_score for p in by_name["truncation"].probes}["a1"] == 0.0
    reference = by_name["claude-code"]
    assert [p.probe for p in reference.probes] == ["a1", "a2", "a3", "a4"]
    assert reference.coverage["boundary"] == 50 and "oneshot" in reference.coverage


def tool_heavy(turns: int, output_chars: int = 2500) -> list[dict]:
    """A session where every turn reads one large tool output: what observation masking is for."""
    messages: list[dict] = [{"role": "system", "content": "You are a careful coding agent."}]
    for i in range(turns):
        messages += [
            {"role": "user", "content": f"Step {i}: check part {i}."},
            tool_call("openai", f"c{i}", "bash", {"command": f"cat src/part_{i}.py"}),
            tool_result("openai", f"c{i}", f"# part {i}\n" + (FILLER * 40)[:output_chars]),
            {"role": "assistant", "content": f"Part {i} is fine."},
        ]
    return messages


async def test_the_hybrid_writes_fewer_summaries_than_summarize_only():
    history, budget, written = tool_heavy(40), 6000, {}
    for name in ("summarize", "summarize-only"):
        backend, recorder = FakeBackend(), EventRecorder()
        manager = make_manager(name, budget, LLM, backend)
        manager.hooks = recorder
        await replay(manager, history, budget=budget)
        stats = manager.stats
        assert stats["summaries"] == backend.calls == stats["provider_calls"]  # one call per summary, no retries
        assert stats["summaries"] == sum(p["summaries"] for p in recorder.payloads("context:post_compact"))
        written[name] = stats["summaries"]
    assert 0 < written["summarize"] < written["summarize-only"]


async def test_summaries_per_turn_and_extractive_tokens_are_reported(tmp_path):
    write_session(tmp_path, "heavy", tool_heavy(40), probes=[probe("h1", 158, "artifact", ["src/part_0.py"])])
    sessions = load_corpus(tmp_path)
    runs = await evaluate(
        sessions, Settings(6000, ("summarize", "summarize-only", "mask"), ModelSpec("extractive")), None
    )
    strategies = summarize_runs(runs)["strategies"]
    hybrid, only, mask = (strategies[n] for n in ("summarize", "summarize-only", "mask"))
    assert hybrid["turns"] == only["turns"] == 80  # a tool call and a conclusion per step
    assert hybrid["summaries_per_100_turns"] == 100 * hybrid["summaries"] / 80
    assert hybrid["summaries"] > 0 and only["summaries"] > 0 and mask["summaries"] == 0
    # Offline the cost is what the extractive summarizer read and wrote; masking makes it read less.
    assert hybrid["summarizer_input_tokens"] == only["summarizer_input_tokens"] == 0
    assert 0 < hybrid["summarizer_tokens"] < only["summarizer_tokens"] and mask["summarizer_tokens"] == 0
    assert hybrid["summarizer_tokens_per_session"] == hybrid["summarizer_tokens"]


# ---------------------------------------------------------------- artifact retention


def step(i: int, command: str) -> list[dict]:
    return [
        {"role": "user", "content": f"Step {i}."},
        tool_call("openai", f"c{i}", "bash", {"command": command}),
        tool_result("openai", f"c{i}", "ok"),
        {"role": "assistant", "content": f"Done {i}."},
    ]


def tallies(tracker: RetentionTracker) -> dict[str, tuple[int, int]]:
    return {b: (t.named, t.total) for b, t in tracker.result.buckets.items() if t.total}


def test_retention_buckets_by_compactions_since_last_seen_verbatim():
    assert [bucket(n) for n in (1, 2, 3, 4, 5, 7, 8, 30)] == ["1", "2", "3-4", "3-4", "5-7", "5-7", "8+", "8+"]
    history = History(TokenCounter("cl100k_base"), "fingerprint")
    first, second = "cat /repo/src/part_0.py", 'grep -n "def main" src/part_1.py'
    for message in [{"role": "system", "content": "agent"}, *step(0, first), *step(1, second), *step(2, "ls")]:
        history.append(message)
    # groups: 0 system | 1 user, 2 call + result, 3 conclusion | 4, 5, 6 step 1 | 7, 8, 9 step 2
    tracker = RetentionTracker(GroupArtifacts(root="/repo"))

    summary = {"role": "user", "content": f"{SUMMARY_MARKER}\nRan `{first}`."}
    tracker.measure(history, 4, 1, [summary])  # compaction 1 takes step 0 out of the verbatim tail
    assert tallies(tracker) == {"1": (2, 2)}  # its file (relative to the root) and its command, both named

    masked = [history.messages[i] for i in range(4, 8)]  # step 1 masked: its call shows as JSON, quotes escaped
    tracker.measure(history, 7, 2, [summary, *masked])
    assert tallies(tracker) == {"1": (4, 4), "2": (2, 2)}

    tracker.measure(history, 7, 5, [])  # three more compactions and a view that names nothing
    assert tallies(tracker) == {"1": (4, 4), "2": (2, 2), "3-4": (0, 2), "5-7": (0, 2)}
    tracker.measure(history, 7, 9, [])
    assert tallies(tracker)["8+"] == (0, 4)
    assert {m["artifact"] for m in tracker.result.missing} == {first, "/repo/src/part_0.py", second, "src/part_1.py"}

    for message in step(3, first):  # the agent runs the first command again: it is verbatim in the tail
        history.append(message)
    tracker.measure(history, 7, 10, [])
    assert tracker.result.buckets["8+"].total == 4 + 2  # only step 1's artifacts were counted this time
    tracker.measure(history, len(history.groups) - 1, 11, [])  # now it leaves the tail again: counting restarts
    assert tallies(tracker)["1"] == (4, 4 + 3)  # step 0's two artifacts (seen again in step 3) and step 2's `ls`
    assert tracker.result.measurements == 6
    assert tracker.result.kinds["errors"].total == 0 and tracker.result.kinds["commands"].total > 0


def test_retention_reads_files_as_the_working_set_spells_and_folds_them():
    """A folded folder line names its files, and ``/repo/./src/a.py`` is ``src/a.py``, as for ``artifacts_kept``."""
    history = History(TokenCounter("cl100k_base"), "fingerprint")
    steps = [*step(0, "cat /repo/./src/app/a.py"), *step(1, "cat src/app/b.py"), *step(2, "cat src/app/c.py")]
    for message in [{"role": "system", "content": "agent"}, *steps, *step(3, "ls")]:
        history.append(message)
    tracker = RetentionTracker(GroupArtifacts(root="/repo"))
    folded = "### Working set\nFiles read or used:\n- src/app/ — read: a.py, b.py\n- lib/ — read: c.py"
    tracker.measure(history, 10, 1, [{"role": "user", "content": f"{SUMMARY_MARKER}\n{folded}"}])

    files = tracker.result.kinds["files"]
    assert (files.named, files.total) == (2, 3)  # c.py is listed under another folder: not named
    assert [m["artifact"] for m in tracker.result.missing if m["kind"] == "files"] == ["src/app/c.py"]


# ---------------------------------------------------------------- the judge's rubric


def six(**scores) -> dict:
    return {d: scores.get(d, 3) for d in DIMENSIONS}


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (json.dumps({**six(accuracy=5, artifact_trail=2), "reason": "ok"}), six(accuracy=5, artifact_trail=2)),
        ("Here you go:\n```json\n" + json.dumps(six(continuity=4)) + "\n```", six(continuity=4)),
        (
            json.dumps({"scores": {"Accuracy": {"score": "4"}, "Artifact Trail": 1.5}}),
            {"accuracy": 4, "artifact_trail": 1.5},
        ),
        (json.dumps([{"dimension": "context awareness", "score": 2}]), {"context_awareness": 2}),
        ('{"accuracy": 4, "context_awareness": 3, "artifact_trail": 2, "completeness": 5, "contin', None),
        ("**Accuracy**: 4\n**Instruction-following**: 5\nArtifact trail = 1", None),
        (json.dumps({"accuracy": 7, "completeness": -1, "continuity": True, "artifact_trail": "n/a"}), {}),
        ("no scores at all", {}),
    ],
)
def test_parse_dimensions(reply, expected):
    if expected is None:  # malformed JSON and prose: read as ``name: N``
        expected = (
            {"accuracy": 4, "context_awareness": 3, "artifact_trail": 2, "completeness": 5}
            if reply.startswith("{")
            else {"accuracy": 4, "artifact_trail": 1, "instruction_following": 5}
        )
    assert parse_dimensions(reply) == {k: float(v) for k, v in expected.items()}


def test_grades_from_judge_replies():
    grade = grade_from("a.py", json.dumps({**six(accuracy=5, artifact_trail=2), "reason": "one file missed"}))
    assert grade.dimensions["artifact_trail"] == 2 and grade.score == pytest.approx((5 + 2 + 3 * 4) / 6)
    assert grade.reason == "one file missed" and grade.error is None
    partial = grade_from("a.py", '{"accuracy": 4, "completeness": 2}')  # dimensions left out: mean of the rest
    assert partial.dimensions == {"accuracy": 4, "completeness": 2} and partial.score == 3
    single = grade_from("a.py", '{"score": 4, "reason": "fine"}')  # a one-score judge still grades
    assert single.score == 4 and single.dimensions == {}
    broken = grade_from("a.py", "I cannot grade this.")
    assert broken.score is None and broken.error == "unparsed_grade"


class ScriptedJudge(FakeBackend):
    """Answers like ``FakeBackend``; grades with the replies given, in turn."""

    def __init__(self, verdicts: list[str]) -> None:
        super().__init__()
        self.verdicts = verdicts

    async def complete(self, system: str, prompt: str, max_output_tokens: int, provider=None) -> Completion:
        if "grade answers" in system:
            self.calls += 1
            return Completion(self.verdicts.pop(0), 50, 10)
        return await super().complete(system, prompt, max_output_tokens, provider)


async def test_judge_dimensions_reach_the_report(tmp_path):
    verdicts = [json.dumps(six(artifact_trail=1)), "```json\n{broken", '{"accuracy": 5}']
    backend = ScriptedJudge(verdicts)
    judge = Judge(backend, backend, load_eval_prompts())
    view = [{"role": "user", "content": "the file is a.py"}]
    question = Probe("p", 0, "artifact", "Which file?", "a.py", ("a.py",))
    grades = [await judge.grade(view, question) for _ in range(3)]
    assert [g.error for g in grades] == [None, "unparsed_grade", None]
    results = [
        ProbeResult(f"p{i}", "artifact", 0, 10, 1.0, ["a.py"], g.score, g.dimensions, g.answer, g.reason, g.error)
        for i, g in enumerate(grades)
    ]
    summary = summarize_runs([Run("s", "summarize", 4, 2, probes=results)])
    means = summary["strategies"]["summarize"]
    assert means["judge_dimensions"]["artifact_trail"] == 1 and means["judge_dimensions"]["accuracy"] == 4
    assert means["judge_graded"] == 2 and means["judge_partial"] == 1 and means["judge_errors"] == 1
    settings = {"budget": 1000, "summarizer": "extractive", "sessions": 1, "seconds": 1.0, "judge": "fake"}
    for text in (markdown(summary, settings), console_summary(summary, settings)):
        assert "| accuracy | context awareness | artifact trail | completeness | continuity | instruction" in text
        assert "| summarize | 4.00 | 3.00 | 1.00 | 3.00 | 3.00 | 3.00 | 3.83 | 2 |" in text  # overall: per probe
        assert "| Factory.ai (published, best) | — | — | 2.45 | — | — | — | 3.70 | — |" in text


def test_deterministic_results_fill_no_judge_columns(tmp_path):
    run = Run("s", "summarize", 4, 2, probes=[ProbeResult("p", "recall", 0, 10, 0.5, ["x"])])
    extra = {"judge": None, "sessions": 1, "seconds": 1.0}
    summary = write_results(tmp_path, [run], Settings(1000, ("summarize",), ModelSpec("extractive")), extra)
    assert summary["strategies"]["summarize"]["judge_dimensions"] is None
    assert "Judge rubric" not in (tmp_path / "results.md").read_text()
    settings = {"budget": 1000, "summarizer": "extractive", **extra}
    assert "Factory.ai" not in console_summary(summary, settings)


# ---------------------------------------------------------------- record / replay


@pytest.mark.slow
async def test_record_then_replay_reproduces_scores_without_calls(tmp_path):
    sessions = load_corpus(small_corpus(tmp_path / "corpus"))
    settings = Settings(BUDGET, ("summarize", "naive", "truncation"), LLM)
    path = tmp_path / "tape.json"

    tape = Cassette.open(path, "record")
    fake = FakeBackend()
    recorder = CassetteBackend(tape, fake, "anthropic", "fake-model")
    recorded = await evaluate(sessions, settings, recorder, Judge(recorder, recorder, load_eval_prompts()))
    tape.save()
    assert fake.calls > 0 and recorder.calls == fake.calls
    assert any(p.judge_score is not None for run in recorded for p in run.probes)

    replayer = CassetteBackend(Cassette.open(path, "replay"), RaisingBackend(), "anthropic", "fake-model")
    replayed = await evaluate(sessions, settings, replayer, Judge(replayer, replayer, load_eval_prompts()))
    assert replayer.calls == 0
    assert probe_scores(replayed) == probe_scores(recorded)
    assert [r.stats for r in replayed] == [r.stats for r in recorded]


async def test_replay_miss_is_an_error_naming_the_key(tmp_path):
    path = tmp_path / "empty.json"
    Cassette(path, "record").save()
    backend = CassetteBackend(Cassette.open(path, "replay"), None, "anthropic", "fake-model")
    key = Cassette.key("sys", "prompt", 10, "anthropic", "fake-model")
    with pytest.raises(CassetteMiss, match=key):
        await backend.complete("sys", "prompt", 10)
    manager = make_manager("summarize", BUDGET, LLM, backend)  # the miss must not become a silent fallback
    with pytest.raises(CassetteMiss):
        await replay(manager, mixed_history(24, size=8), budget=BUDGET)


# ---------------------------------------------------------------- command line


def no_keys(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.slow
def test_cli_runs_offline_and_writes_results(tmp_path, monkeypatch, capsys):
    no_keys(monkeypatch)
    out = tmp_path / "out"
    code = cli.main(["--corpus", str(small_corpus(tmp_path / "corpus")), "--out", str(out), "--budget", str(BUDGET)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "extractive" in captured.err and "deterministic" in captured.err
    assert "| summarize |" in captured.out and "| claude-code |" in captured.out
    for name in ("results.md", "results.json", "view_tokens.png"):
        assert (out / name).stat().st_size > 0
    data = json.loads((out / "results.json").read_text())
    assert data["settings"]["summarizer"] == "extractive"
    assert {r["strategy"] for r in data["runs"]} == {*STRATEGIES, "claude-code"}
    assert all("records" in r and "probes" in r for r in data["runs"])
    assert "## Per session" in (out / "results.md").read_text()


@pytest.mark.slow
def test_cli_record_then_replay_gives_identical_results(tmp_path, monkeypatch, capsys):
    corpus = small_corpus(tmp_path / "corpus")
    tape = tmp_path / "tape.json"
    fake = FakeBackend()
    monkeypatch.setattr(
        "amplifier_module_context_summarize.backends.registry.build_backend", lambda cfg, **kwargs: fake
    )
    common = ["--corpus", str(corpus), "--budget", str(BUDGET), "--quiet"]
    assert (
        cli.main(
            [
                *common,
                "--out",
                str(tmp_path / "a"),
                "--summarizer",
                "anthropic",
                "--model",
                "fake-model",
                "--judge",
                "claude-judge",
                "--record",
                str(tape),
            ]
        )
        == 0
    )
    assert fake.calls > 0

    def refuse(cfg, **kwargs):
        raise AssertionError("replay must not build a backend")

    monkeypatch.setattr("amplifier_module_context_summarize.backends.registry.build_backend", refuse)
    no_keys(monkeypatch)
    assert cli.main([*common, "--out", str(tmp_path / "b"), "--replay", str(tape)]) == 0  # settings from the tape
    first, second = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("a", "b"))
    assert second["settings"]["judge"] == "anthropic:claude-judge"

    def scores(data):
        return [
            (r["session"], r["strategy"], p["probe"], p["key_score"], p["judge_score"])
            for r in data["runs"]
            for p in r["probes"]
        ]

    assert scores(first) == scores(second)
    assert any(s[-1] is not None for s in scores(first))
    capsys.readouterr()
    tape.write_text(json.dumps({"entries": {}}), encoding="utf-8")
    assert (
        cli.main(
            [
                *common,
                "--out",
                str(tmp_path / "c"),
                "--replay",
                str(tape),
                "--summarizer",
                "anthropic",
                "--model",
                "fake-model",
            ]
        )
        == 2
    )
    assert "has no entry for key" in capsys.readouterr().err


def test_cli_reports_corpus_errors(tmp_path, capsys):
    (tmp_path / "bad.jsonl").write_text('{"role": "user", "content": "x"}\nnot json\n', encoding="utf-8")
    assert cli.main(["--corpus", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "bad.jsonl:2: malformed JSON" in capsys.readouterr().err


def test_eval_through_the_package_entry_point(tmp_path, monkeypatch, capsys):
    try:
        from amplifier_module_context_summarize.__main__ import main
    except ImportError as exc:  # the other subcommands are written alongside this one
        pytest.skip(f"__main__ is not importable yet: {exc}")
    no_keys(monkeypatch)
    corpus = small_corpus(tmp_path / "corpus")
    try:
        code = main(
            [
                "eval",
                "--corpus",
                str(corpus),
                "--out",
                str(tmp_path / "out"),
                "--budget",
                str(BUDGET),
                "--sessions",
                "beta",
                "--strategies",
                "summarize,truncation",
            ]
        )
    except ImportError as exc:
        pytest.skip(f"__main__ is not importable yet: {exc}")
    assert code == 0
    assert "| truncation |" in capsys.readouterr().out
    assert (tmp_path / "out" / "results.json").is_file()


def test_progress_is_silent_off_a_terminal():
    stream = io.StringIO()
    bar = make_progress(5, "replaying", quiet=False, stream=stream)
    for _ in range(5):
        bar.update()
    bar.close()
    assert stream.getvalue() == "" and bar.done == 5


def test_retention_reads_a_command_run_in_the_root_as_the_working_set_shows_it():
    history = History(TokenCounter("cl100k_base"), "fingerprint")
    for message in [{"role": "system", "content": "agent"}, *step(0, "cd /repo && make lint"), *step(1, "ls")]:
        history.append(message)
    tracker = RetentionTracker(GroupArtifacts(root="/repo"))
    tracker.measure(history, 4, 1, [{"role": "user", "content": f"{SUMMARY_MARKER}\n- `make lint` — ok"}])

    assert (tracker.result.kinds["commands"].named, tracker.result.kinds["commands"].total) == (1, 1)
