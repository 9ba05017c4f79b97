"""A fleet of worker processes sharing one Redis: a session resumes on another host for free, and eight
workers replaying forks of one session at the same time pay for each segment once."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from amplifier_module_context_summarize.__main__ import main
from amplifier_module_context_summarize.benchmark.fleet import (
    FleetPlan,
    config_for,
    render,
    run_fleet,
    run_worker,
    run_worker_process,
    stored_summaries,
)
from amplifier_module_context_summarize.testing import RedisServer

PLAN = FleetPlan(workers=8, prefix_turns=16, fork_turns=8, budget=5_000, delay_s=0.02)


def test_a_session_resumes_on_another_host_with_no_provider_call(redis_server: RedisServer, tmp_path: Path) -> None:
    plan = replace(PLAN, workers=1)
    config = config_for("redis", plan, 0, redis_server.url, tmp_path)
    written = run_worker_process(0, plan, config)
    resumed = run_worker_process(0, plan, config, mode="resume")  # a new process: its local store is empty
    assert written.calls >= 3 and written.connected
    assert resumed.calls == 0 and resumed.connected
    assert resumed.final_view == written.final_view


def test_eight_workers_replaying_forks_pay_for_each_segment_once(redis_server: RedisServer) -> None:
    run = run_fleet("redis", PLAN, redis_server.url)
    assert all(worker.connected for worker in run.workers)
    run.stored = stored_summaries(redis_server.url)
    assert run.calls == run.stored, "a segment was paid for by two workers"
    in_band = {"max_tokens": PLAN.budget, "background_compaction": False}  # as config_for: a replay compacts in band
    alone = asyncio.run(run_worker(0, replace(PLAN, delay_s=0), in_band))
    assert run.workers[0].final_view == alone.final_view  # sharing changed no view
    assert run.calls < PLAN.workers * alone.calls  # the shared prefix was paid for once, not by every worker
    assert not redis.Redis.from_url(redis_server.url).keys("acs:v1:*:lock:*"), "every claim was released"
    table = render([run])
    [row] = [line for line in table.splitlines() if line.startswith("one Redis for the fleet")]
    assert "8 worker processes" in table and row.split()[-4] == str(run.calls)
    assert f"summaries stored in Redis after its run: {run.calls} " in table
    assert run.to_json()["calls"] == run.calls


def test_bench_fleet_says_what_it_needs_without_redis(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(RedisServer, "binary", staticmethod(lambda: None))
    assert main(["bench", "--fleet", "--quick"]) == 2
    assert "needs redis-server" in capsys.readouterr().out
