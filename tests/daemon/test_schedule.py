"""The writer's schedule and the one back-off: the rules, without a daemon."""

from __future__ import annotations

import random

from indexer.surfaces.schedule import Schedule
from providers.backoff import Backoff
from providers.errors import RateLimited, TransientError
from providers.retry import RetryPolicy, call_with_retries


def test_a_memory_burst_is_synced_within_two_debounce_periods() -> None:
    plan = Schedule()
    for t in range(10):  # a file written every 0.5 s, debounce 1 s
        plan.changed("memory", 100.0 + t * 0.5, 1.0, retrying=False)
        if plan.take("memory", 100.0 + t * 0.5):
            break
    assert plan.due("memory") is None  # taken at 102.0, two periods after the first
    assert t == 4


def test_a_transcript_event_brings_a_later_look_forward_but_not_a_retry() -> None:
    plan = Schedule()
    plan.plan("sessions", 105.0)  # a tail's recheck
    plan.changed("sessions", 100.0, 1.0, retrying=False)
    assert plan.due("sessions") == 101.0
    plan.plan("sessions", 160.0)  # a failure's back-off
    plan.changed("sessions", 100.0, 1.0, retrying=True)
    assert plan.due("sessions") == 160.0


def test_rescan_keeps_a_failed_tasks_back_off() -> None:
    plan = Schedule()
    plan.rescan(0.0, 10.0, memory_ok=True, sessions_ok=True)  # starts the count
    plan.plan("sessions", 500.0)  # a retry
    plan.rescan(10.0, 10.0, memory_ok=False, sessions_ok=True)
    assert plan.due("memory") is None and plan.due("sessions") == 500.0
    plan.rescan(20.0, 10.0, memory_ok=True, sessions_ok=True)
    assert plan.due("memory") == 20.0
    assert plan.wait(15.0) == 1.0 and plan.wait(20.5) == 0.0


def test_batch_polls_grow_and_start_over() -> None:
    plan = Schedule()
    got = []
    for _ in range(8):
        plan.batch_polled(0.0)
        got.append(plan.due("embed"))
    assert got == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    plan.batch_done()
    plan.batch_polled(0.0)
    assert plan.due("embed") == 1.0


def test_one_backoff_rule() -> None:
    rule = Backoff(initial=2.0, maximum=300.0)
    assert [rule.delay(n) for n in (1, 2, 3, 8, 9, 10_000)] == [2, 4, 8, 256, 300, 300]
    jitter = Backoff(initial=1.0, maximum=8.0, jitter=True)
    rng = random.Random(1)
    draws = [jitter.delay(4, rng) for _ in range(200)]
    assert all(0 <= d <= 8.0 for d in draws) and max(draws) > 6 and min(draws) < 2


def test_retries_honour_retry_after_then_give_up() -> None:
    slept: list[float] = []
    calls = 0

    def flaky() -> int:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RateLimited("429", retry_after=7.0)
        raise TransientError("503")

    policy = RetryPolicy(attempts=3, initial=0.5, maximum=1.0, max_retry_after=5.0)
    try:
        call_with_retries(flaky, policy, sleep=slept.append)
    except TransientError as exc:
        assert "503" in str(exc)
    else:
        raise AssertionError("the third failure is raised")
    assert calls == 3 and slept[0] == 5.0 and 0 <= slept[1] <= 1.0 and len(slept) == 2


def test_uncommitted_tails_stay_pending_while_their_recheck_runs() -> None:
    """``status`` is not current while a transcript tail waits for its commit: also
    in the pass that rechecks it, which took the due time (it said dirty: false)."""
    plan = Schedule()
    plan.backfill = False  # the daemon's first pass is done
    plan.transcript_tails = 1  # the last pass indexed a tail, and planned a recheck
    plan.plan("sessions", 105.0)
    assert plan.take("sessions", 106.0) and plan.pending  # the recheck runs
    plan.transcript_tails = 0  # it committed them
    assert not plan.pending
