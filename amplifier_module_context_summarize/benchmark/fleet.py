"""Provider calls of a fleet: N worker processes replaying forks of one session, sharing Redis or not.

Each worker is a separate process (its own event loop, its own local store) replaying one fork: a shared
prefix of ``prefix_turns`` turns, a fork-specific user message, then ``fork_turns`` more turns. The workers
are released together, so they reach the prefix's compactions at the same time. A fake provider that takes
``delay_s`` per call writes the summaries; each worker reports the calls it made.

* ``redis``: every worker points at one Redis (``storage_url``): each segment is paid for once in the fleet.
* ``sqlite``: each worker has its own SQLite file (one host each): every worker pays for the shared prefix.
* ``shared-sqlite``: one SQLite file for all (one host): summaries are shared, but two workers that need a
  segment at the same time both pay (no claims).

The module's tests run the same workers (``run_fleet``); ``python -m ... bench --fleet`` prints the figures.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import multiprocessing
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..testing.builders import mixed_history

REPLY = "Goal: inspect and fix the project. Progress: files read, tests run, one fix made. Next: carry on."
"""The same reply for every segment, so every worker makes the same cuts whoever wrote a summary."""
KINDS = ("redis", "sqlite", "shared-sqlite")


@dataclass(frozen=True)
class FleetPlan:
    workers: int = 8
    prefix_turns: int = 40
    fork_turns: int = 20
    budget: int = 12_000
    delay_s: float = 0.2
    """Time the fake provider takes per call (a real one takes seconds)."""


@dataclass
class WorkerReport:
    fork: int
    calls: int
    waits: int
    served: int
    compactions: int
    cache_hits: int
    final_view: str
    """sha256 of the view after the whole fork, to compare workers' views without shipping them."""
    connected: bool | None
    seconds: float


@dataclass
class FleetRun:
    kind: str
    plan: FleetPlan
    workers: list[WorkerReport] = field(default_factory=list)
    seconds: float = 0.0
    stored: int | None = None
    """Summaries in Redis after the run (``redis`` only): one per segment the fleet paid for."""

    @property
    def calls(self) -> int:
        return sum(w.calls for w in self.workers)

    @property
    def waits(self) -> int:
        return sum(w.waits for w in self.workers)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "calls": self.calls,
            "waits": self.waits,
            "seconds": self.seconds,
            "stored": self.stored,
            "workers": [asdict(w) for w in self.workers],
        }


def fork_history(fork: int, prefix_turns: int, fork_turns: int) -> list[dict[str, Any]]:
    """The shared prefix, a user message only fork ``fork`` has, then more turns."""
    full = mixed_history(prefix_turns + fork_turns)
    cut = len(mixed_history(prefix_turns))
    turn = {"role": "user", "content": f"Sub-agent {fork}: take approach number {fork} from here on."}
    return [*full[:cut], turn, *full[cut:]]


def view_digest(view: list[dict[str, Any]]) -> str:
    return hashlib.sha256(json.dumps(view, sort_keys=True, default=repr).encode()).hexdigest()


def config_for(kind: str, plan: FleetPlan, fork: int, url: str | None, directory: Path) -> dict[str, Any]:
    # A replay has no agent time between requests for background work to land in: compact in band, as the
    # other replays do, so every summary a worker pays for is stored before it stops.
    config: dict[str, Any] = {"max_tokens": plan.budget, "background_compaction": False}
    if kind == "redis":
        config["storage_url"] = url
    elif kind == "sqlite":
        config["storage_path"] = str(directory / f"worker-{fork}.sqlite")
    else:
        config["storage_path"] = str(directory / "shared.sqlite")
    return config


async def run_worker(fork: int, plan: FleetPlan, config: dict[str, Any], mode: str = "replay") -> WorkerReport:
    """One worker: replay its fork (``mode="replay"``) or resume it from the store with no provider at all."""
    from .. import create_manager
    from ..testing import FakeProvider, replay

    started = time.perf_counter()
    manager = create_manager(config)
    provider = FakeProvider(reply=REPLY, delay=plan.delay_s)
    history = fork_history(fork, plan.prefix_turns, plan.fork_turns)
    if mode == "replay":
        await replay(manager, history, provider, budget=plan.budget)
    else:
        await manager.set_messages(history)
    final = await manager.get_messages_for_request(plan.budget, provider)
    stats = manager.stats
    flight = manager.segments.flight
    connected = getattr(manager.store, "connected", None)
    await manager.store.close()
    return WorkerReport(
        fork=fork,
        calls=len(provider.requests),
        waits=flight.waits,
        served=flight.served,
        compactions=stats["compactions"],
        cache_hits=stats["cache_hits"],
        final_view=view_digest(final),
        connected=connected,
        seconds=round(time.perf_counter() - started, 3),
    )


def run_worker_process(
    fork: int, plan: FleetPlan, config: dict[str, Any], mode: str = "replay", timeout: float = 300
) -> WorkerReport:
    """One worker in a fresh interpreter: another host, as far as the stores can tell."""
    job = {"fork": fork, "plan": asdict(plan), "config": config, "mode": mode}
    return WorkerReport(**_in_subprocess("worker", job, timeout))


def run_fleet(kind: str, plan: FleetPlan, url: str | None = None, timeout: float = 300) -> FleetRun:
    """``plan.workers`` worker processes, one fork each, released together, over the stores ``kind`` names.

    A launcher process imports the module and loads the tokenizer once, then forks the workers; each builds
    its own manager, stores and connections after the fork, so the fleet starts in a fraction of a second.
    """
    with tempfile.TemporaryDirectory(prefix="acs-fleet-") as scratch:
        job = {"kind": kind, "plan": asdict(plan), "url": url, "directory": scratch}
        data = _in_subprocess("fleet", job, timeout)
    return FleetRun(kind, plan, [WorkerReport(**w) for w in data["workers"]], data["seconds"])


def _in_subprocess(command: str, job: dict[str, Any], timeout: float) -> dict[str, Any]:
    argv = [sys.executable, "-m", __name__, command, json.dumps(job)]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"fleet {command} failed (exit {result.returncode}):\n{result.stderr[-4000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _launch(job: dict[str, Any]) -> dict[str, Any]:
    from ..core.tokens import text_counter

    plan, directory = FleetPlan(**job["plan"]), Path(job["directory"])
    text_counter()("load the tokenizer before forking")
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(plan.workers + 1)
    results = context.Queue()
    workers = [
        context.Process(
            target=_forked,
            args=(fork, plan, config_for(job["kind"], plan, fork, job["url"], directory), barrier, results),
        )
        for fork in range(plan.workers)
    ]
    for worker in workers:
        worker.start()
    barrier.wait(timeout=60)
    started = time.perf_counter()
    reports = [results.get(timeout=300) for _ in workers]
    seconds = round(time.perf_counter() - started, 3)
    for worker in workers:
        worker.join(timeout=60)
    failed = [r["error"] for r in reports if "error" in r]
    if failed:
        raise RuntimeError("a fleet worker failed:\n" + failed[0])
    return {"workers": sorted(reports, key=lambda r: r["fork"]), "seconds": seconds}


def _forked(fork: int, plan: FleetPlan, config: dict[str, Any], barrier: Any, results: Any) -> None:
    barrier.wait(timeout=60)
    try:
        results.put(asdict(asyncio.run(run_worker(fork, plan, config))))
    except BaseException:
        results.put({"fork": fork, "error": traceback.format_exc()})


def run_comparison(plan: FleetPlan) -> list[FleetRun]:
    """The three fleets of the module docstring; needs ``redis-server`` (``RedisServer.binary()``)."""
    from ..testing import RedisServer

    runs = []
    with tempfile.TemporaryDirectory(prefix="acs-redis-") as scratch, RedisServer.started(Path(scratch)) as server:
        run = run_fleet("redis", plan, server.url)
        run.stored = stored_summaries(server.url)
        runs.append(run)
    runs.append(run_fleet("sqlite", plan))
    runs.append(run_fleet("shared-sqlite", plan))
    return runs


BESIDE_SUMMARIES = (b":s:mask:", b":s:ws:", b":s:cut:", b":s:inject:")
"""Key parts of the rows stored beside summaries (mask ends, working sets, a plan's cuts, injected context): not
summaries."""


def stored_summaries(url: str) -> int:
    """Summaries held under this module's keys in the Redis at ``url``."""
    import redis

    client = redis.Redis.from_url(url)
    try:
        keys = client.scan_iter(match="acs:v1:*:s:*")
        summaries = (key for key in keys if not any(b in key for b in BESIDE_SUMMARIES))
        return sum(client.hlen(key) for key in summaries)
    finally:
        client.close()


def render(runs: list[FleetRun]) -> str:
    plan = runs[0].plan
    lines = [
        f"Fleet: {plan.workers} worker processes, each replaying a fork of one session ({plan.prefix_turns} shared "
        f"turns + {plan.fork_turns} of its own), released together; fake provider, {plan.delay_s * 1000:.0f} ms a call",
        "",
        f"{'summary store':<42}{'provider calls':>15}{'per worker':>12}{'waits':>7}{'wall s':>8}",
    ]
    names = {
        "redis": "one Redis for the fleet (claims)",
        "sqlite": "own SQLite file per worker (one host each)",
        "shared-sqlite": "one SQLite file shared (same host)",
    }
    for run in runs:
        lines.append(
            f"{names[run.kind]:<42}{run.calls:>15}{run.calls / plan.workers:>12.1f}{run.waits:>7}{run.seconds:>8.1f}"
        )
    by_kind = {run.kind: run for run in runs}
    if "redis" in by_kind and by_kind["redis"].stored is not None:
        lines += ["", f"summaries stored in Redis after its run: {by_kind['redis'].stored} (one per segment paid for)"]
    if "redis" in by_kind and "sqlite" in by_kind and by_kind["redis"].calls:
        ratio = by_kind["sqlite"].calls / by_kind["redis"].calls
        lines += ["", f"own SQLite per worker / shared Redis: {ratio:.2f}x the provider calls"]
    return "\n".join(lines)


def _main(command: str, job_text: str) -> int:
    job = json.loads(job_text)
    if command == "fleet":
        result = _launch(job)
    else:
        report = run_worker(job["fork"], FleetPlan(**job["plan"]), job["config"], job.get("mode", "replay"))
        result = asdict(asyncio.run(report))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1], sys.argv[2]))
