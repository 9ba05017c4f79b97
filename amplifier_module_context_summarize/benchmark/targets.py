"""The benchmark's targets, each checked against measured figures and reported PASS or FAIL."""

from __future__ import annotations

from dataclasses import dataclass

from .cold_llm import COLD_LLM_BUDGET, ColdLLMTimes
from .costs import SizeCosts
from .fixtures import Memory
from .long_session import LongCosts
from .simulation import SimResult

FLAT_COMPACTIONS = 1.5
"""A compaction late in a long session may cost at most this many times one early in it."""
LOOP_LAG_MS = 50.0
LOOP_LAG_SIZE = 50_000
"""Longest the event loop may stay blocked late in the long session (a heartbeat's lag) by the module's own
work."""
LOOP_LAG_HOST_COLLECTIONS = 1.25
"""The same as a user sees it, the garbage collector's pauses included, in the host's own full collections (the
bench process holding the session's messages, before a manager holds them: ``LongCosts.host_collection_s``): a
collection the host pays anyway may land in a beat, the module's work beside it must stay short (issue 48).
Measured twice: in the long session as replayed, and in a host that decodes each message and keeps none, against
its full collection with the contract's list-holding context (``live_host.py``)."""
RESUME_STORED_S = 2.0
RESUME_NOTHING_STORED_S = 5.0
RESUME_SIZE = 50_000
"""``set_messages`` of the long session then its first request, wall seconds (issue 37: what the user waits; the
CPU seconds are reported beside them): with its summaries stored, and not."""
COLD_LLM_S = 5.0
COLD_LLM_SIZE = 50_000
"""The LLM path's first request after ``set_messages`` with nothing stored, wall seconds (issue 48: the extractive
cold resume's 5 s)."""
REFERENCE_SIZE = 10_000
SMALL_SIZE = 1_000
LARGE_SIZE = 100_000


@dataclass(frozen=True)
class Target:
    name: str
    value: float
    limit: float
    at_most: bool
    """True when ``value`` must not exceed ``limit``; False when it must reach it."""
    set_at: int | None = None
    """The history size the target is set for, when it was measured at another (``--quick``): the figure is
    then indicative, since fixed costs weigh more in a small history, and it does not count as a miss."""

    @property
    def passed(self) -> bool:
        return self.value <= self.limit if self.at_most else self.value >= self.limit

    @property
    def counts(self) -> bool:
        """Whether it decides the run (``all_passed``, ``bench --check``)."""
        return self.set_at is None


def all_passed(targets: list[Target]) -> bool:
    return all(t.passed for t in targets if t.counts)


def _elsewhere(measured: int, wanted: int) -> int | None:
    return None if measured == wanted else wanted


def _pick(sizes: list[int], wanted: int, fallback: int) -> int:
    return wanted if wanted in sizes else fallback


def evaluate(
    costs: dict[int, SizeCosts],
    memory: dict[int, Memory],
    sim: SimResult | None,
    long_session: list[LongCosts] | None = None,
    cold_llm: list[ColdLLMTimes] | None = None,
) -> list[Target]:
    """Targets at 1k / 10k / 100k messages, or at the smallest / largest measured size when those were not run."""
    targets: list[Target] = []
    sizes = sorted(costs)
    if sizes:
        ref = _pick(sizes, REFERENCE_SIZE, sizes[-1])
        small = _pick(sizes, SMALL_SIZE, sizes[0])
        large = _pick(sizes, LARGE_SIZE, sizes[-1])
        at_ref, at_small = costs[ref], costs[small]
        targets += [
            Target(
                f"request / list-copy floor at {ref:,} msgs (view = whole history)",
                at_ref.states["open"].request_over_floor,
                2.0,
                True,
                _elsewhere(ref, REFERENCE_SIZE),
            ),
            Target(
                f"steady turn at {ref:,} / at {small:,} msgs (summary in force)",
                at_ref.states["compacted"].turn_s / at_small.states["compacted"].turn_s,
                2.0,
                True,
                _elsewhere(ref, REFERENCE_SIZE),
            ),
            Target(
                f"naive recount turn / steady turn at {ref:,} msgs",
                at_ref.naive_turn_s / at_ref.states["compacted"].turn_s,
                50.0,
                False,
                _elsewhere(ref, REFERENCE_SIZE),
            ),
            Target(
                f"own memory per message at {large:,} msgs (bytes)",
                memory[large].own_bytes_per_message,
                512.0,
                True,
                _elsewhere(large, LARGE_SIZE),
            ),
        ]
    if sim is not None:
        targets += [
            Target("summarizer input / session tokens", sim.input_over_session, 1.5, True),
            Target(
                "compactions / allowed (1.2 x growth / band + 1)",
                sim.compactions / sim.compactions_allowed,
                1.0,
                True,
            ),
            Target("share of views extending the previous one", sim.extension_share, 0.95, False),
        ]
    for run in long_session or []:
        first, last = run.checkpoints[0].messages, run.checkpoints[-1].messages
        targets.append(
            Target(
                f"compaction CPU time at {last:,} / at {first:,} msgs ({run.kind})",
                run.flatness,
                FLAT_COMPACTIONS,
                True,
            )
        )
        lag_at = None if last >= LOOP_LAG_SIZE else LOOP_LAG_SIZE
        targets += [
            Target(
                f"event loop blocked at most near {last:,} msgs, ms ({run.kind})",
                run.loop_lag_last_s * 1000,
                LOOP_LAG_MS,
                True,
                lag_at,
            ),
            Target(
                f"event loop blocked at most near {last:,} msgs, collector pauses included, ms ({run.kind}; limit "
                f"{LOOP_LAG_HOST_COLLECTIONS}x the host's full collection, {run.host_collection_s * 1000:.0f} ms)",
                run.loop_lag_raw_last_s * 1000,
                LOOP_LAG_HOST_COLLECTIONS * run.host_collection_s * 1000,
                True,
                lag_at,
            ),
        ]
        live = run.live_host
        if live is not None:
            yardstick = live.list_context.collection_s * 1000
            targets.append(
                Target(
                    f"event loop blocked at most near {live.messages:,} msgs, host decoding each message, collector "
                    f"pauses included, ms ({run.kind}; limit {LOOP_LAG_HOST_COLLECTIONS}x the host's full collection "
                    f"with a list-holding context, {yardstick:.0f} ms)",
                    live.module.lag_raw_s * 1000,
                    LOOP_LAG_HOST_COLLECTIONS * yardstick,
                    True,
                    None if live.messages >= LOOP_LAG_SIZE else LOOP_LAG_SIZE,
                )
            )
        if run.resume is not None:
            at = None if run.resume.messages >= RESUME_SIZE else RESUME_SIZE
            n = run.resume.messages
            targets += [
                Target(
                    f"resume {n:,} msgs, summaries stored: set + first request, s",
                    run.resume.stored.wall_s,
                    RESUME_STORED_S,
                    True,
                    at,
                ),
                Target(
                    f"resume {n:,} msgs, nothing stored: set + first request, net of collector pauses, s",
                    run.resume.nothing_stored.net_s,
                    RESUME_NOTHING_STORED_S,
                    True,
                    at,
                ),
                Target(
                    f"resume {n:,} msgs, nothing stored: set + first request, collector pauses included, s",
                    run.resume.nothing_stored.wall_s,
                    RESUME_NOTHING_STORED_S,
                    True,
                    at,
                ),
            ]
    for cold in cold_llm or []:
        targets.append(
            Target(
                f"LLM path, nothing stored, {cold.messages:,} msgs: first request after set_messages "
                f"(instant provider, budget {COLD_LLM_BUDGET:,}), collector pauses included, s",
                cold.request_s,
                COLD_LLM_S,
                True,
                None if cold.messages == COLD_LLM_SIZE else COLD_LLM_SIZE,
            )
        )
    return targets
