"""``bench --collector``: what a manager holding a long session costs the garbage collector (issue 48).

A full collection walks every object the collector tracks and visits every reference each holds, so its pause
follows the whole process's heap. Three figures in one process, each the best of a few ``gc.collect()`` calls (CPU
time) with its count of tracked objects and of the references they hold: the interpreter and the package alone (a
first manager's imports done), then with the host's messages (the bench's coding session), then with a manager
that resumed that session (``set_messages``, then the first request: the extractive strategy, nothing stored) and
took a few turns after it. The ratio of the last two is the module's share of every full collection the host pays;
the tracked objects it adds per stored message are what its storage leaves for the collector to walk. The manager
is built ``ROUNDS`` times, the host's collection timed between them.
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from dataclasses import dataclass
from typing import Any

from .. import create_manager
from ..core.messages import Message
from ..testing import replay_steps
from .coding import CodingSession
from .synth import SMALL, TextSource

BUDGET = 100_000
"""The long session's budget (``long_session.LongPlan``)."""
TURNS_AFTER = 40
"""Messages added after the resume, a request before each assistant one: the steady state, not only the resume."""
REPEATS = 7
SETTLE_S = 0.2
"""Seconds the agent's model call takes after the last turn (what is still in flight then settles)."""
ROUNDS = 3
"""Managers built and let go in turn, the host's collection timed before the first and after each: this machine's
speed swings up to 2x between minutes (and a process's heap layout changes a collection's time), so each manager's
collection is set against the host's timed beside it, and the median of those ratios is reported."""


@dataclass(frozen=True)
class Collection:
    seconds: float
    """The best of ``REPEATS`` full collections, in CPU seconds (``time.process_time``)."""
    tracked: int
    """Objects the collector tracks (``gc.get_objects()``) after them."""
    references: int
    """References those objects hold (``gc.get_referents``), each of which a full collection visits: what its time
    follows, more than the objects' count (a list of 31,000 integers is one object and 31,000 visits)."""


@dataclass(frozen=True)
class CollectorCosts:
    messages: int
    alone: Collection
    """The interpreter and the package."""
    host: Collection
    """With the host's messages: the faster of one before the manager holds them and one after it is gone."""
    manager: Collection
    """With the host's messages and a manager holding them (the median round's time)."""
    round_ratios: tuple[float, ...] = ()
    """Each round's manager collection over the faster of the host's timed just before and just after it."""

    @property
    def ratio(self) -> float:
        """A full collection with the manager over one with the host's messages only (target <= 1.25): the median
        of the rounds'."""
        return statistics.median(self.round_ratios) if self.round_ratios else 0.0

    @property
    def tracked_ratio(self) -> float:
        """Tracked objects with the manager over those with the host's messages only: what the time ratio follows
        on a quiet machine, the same in every run."""
        return self.manager.tracked / self.host.tracked if self.host.tracked else 0.0

    @property
    def references_ratio(self) -> float:
        """References visited with the manager over those with the host's messages only."""
        return self.manager.references / self.host.references if self.host.references else 0.0

    @property
    def tracked_per_message(self) -> float:
        """The manager's tracked objects per stored message."""
        return (self.manager.tracked - self.host.tracked) / max(self.messages, 1)


EVICT_BYTES = 128 << 20
"""Written between two collections timed after other work: more than a processor's caches hold."""


def collection_times(repeats: int = REPEATS, after_other_work: bool = False) -> list[float]:
    """CPU seconds (another process on the machine does not count) of ``repeats`` full collections.

    Back to back, each collection walks a heap the one before has just brought into the processor's caches: on a
    machine with large caches that is much faster than a collection that follows other work, as every pause of a
    running process does. ``after_other_work``: each one after writing ``EVICT_BYTES`` (16-18 ms against 26-31 ms
    for the bench's 50,000 messages on the machine of issue 48's fifth stop)."""
    times = []
    for _ in range(repeats):
        if after_other_work:
            bytearray(EVICT_BYTES)[:] = bytes(EVICT_BYTES)
        started = time.process_time()
        gc.collect()
        times.append(time.process_time() - started)
    return times


def full_collection() -> Collection:
    seconds = min(collection_times())
    return Collection(seconds, *census())


def census() -> tuple[int, int]:
    """Objects the collector tracks, and the references they hold."""
    tracked = gc.get_objects()
    return len(tracked), sum(len(gc.get_referents(o)) for o in tracked)


async def _held_by_a_manager(config: dict[str, Any], messages: list[Message], later: list[Message]) -> Collection:
    """A full collection with a manager resumed on ``messages`` that then took ``later``'s turns; the manager is
    gone when this returns."""
    manager = create_manager(config)
    await manager.set_messages(messages)
    await manager.get_messages_for_request(token_budget=BUDGET)
    async for step in replay_steps(manager, later, budget=BUDGET):
        if step.due:
            await step.request()
    # The last compaction's report is finished after its request returns (the artifact account, in a worker thread:
    # tens of thousands of strings on a resume) while the agent awaits its model: timed after that, as the manager
    # holds the session between turns, not with a report in flight.
    await asyncio.sleep(SETTLE_S)
    return full_collection()


async def measure_collector(size: int, text: TextSource | None = None) -> CollectorCosts:
    text = text or TextSource()
    config = {"max_tokens": BUDGET, "compaction_strategy": "extractive", "background_compaction": False}
    warm = create_manager({**config, "max_tokens": 2_000})  # what a first manager imports is not the session's
    await warm.set_messages(CodingSession(SMALL, seed=1, text=text).history(300))
    await warm.get_messages_for_request(token_budget=2_000)
    del warm
    alone = full_collection()
    session = CodingSession(SMALL, seed=50_000, text=text).history(size + TURNS_AFTER)
    messages, later = session[:size], session[size:]
    hosts = [full_collection()]
    held: list[Collection] = []
    for _ in range(ROUNDS):
        held.append(await _held_by_a_manager(config, messages, later))
        hosts.append(full_collection())
    # Each manager's time against the faster of the host's just before it and just after it is gone: a machine that
    # slowed down meanwhile cannot make the manager look cheaper than it is.
    ratios = tuple(m.seconds / min(hosts[k].seconds, hosts[k + 1].seconds) for k, m in enumerate(held))
    host = Collection(statistics.median(h.seconds for h in hosts), hosts[0].tracked, hosts[0].references)
    manager = sorted(held, key=lambda m: m.seconds)[len(held) // 2]
    return CollectorCosts(size, alone, host, manager, ratios)


def render(costs: list[CollectorCosts]) -> str:
    lines = [f"Garbage collector: one full collection (best of {REPEATS}) and the objects it walks"]
    for c in costs:
        lines += [
            f"  at {c.messages:,} msgs: interpreter and package {c.alone.seconds * 1000:.0f} ms "
            f"({c.alone.tracked:,} tracked); with the host's messages {c.host.seconds * 1000:.0f} ms "
            f"({c.host.tracked:,}); with a manager holding them {c.manager.seconds * 1000:.0f} ms "
            f"({c.manager.tracked:,})",
            f"  manager / host's messages only: {c.ratio:.2f}x (target <= 1.25; the median of {len(c.round_ratios)} "
            f"rounds: {' / '.join(f'{r:.2f}' for r in c.round_ratios)}; in tracked objects "
            f"{c.tracked_ratio:.2f}x, in references visited {c.references_ratio:.2f}x); the manager's tracked "
            f"objects per stored message: {c.tracked_per_message:.2f}",
        ]
    return "\n".join(lines)
