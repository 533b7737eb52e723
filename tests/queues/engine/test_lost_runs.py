"""What a worker asks about the runs it holds: which are no longer its own (`lost_runs`, one
read), and, for one taken away, how its handler ended (`record_handler_end`, on the history
row of the action that took it)."""

from __future__ import annotations

from datetime import timedelta

from queues.api import DequeueOptions, Job
from queues.engine.history import this_process
from queues.enums import HandlerEnd
from tests.queues.conftest import unique_queue
from tests.queues.support.recording import recorded

LEASE = timedelta(seconds=60)


def test_lost_runs_names_the_runs_cancelled_retried_released_or_reaped(queue):
    name = unique_queue("lost")
    queue.enqueue_many([Job(queue_name=name) for _ in range(5)])
    short = DequeueOptions.batch(1).with_lease_duration(timedelta(seconds=5))
    reaped = queue.dequeue(name, short)[0]
    cancelled, retried, released, kept = queue.dequeue(name, DequeueOptions.batch(4))
    queue.cancel_job(cancelled.id)
    queue.retry_job(retried.id)
    assert queue.release_job_run(released)
    queue.clock.advance(timedelta(seconds=6))
    queue.requeue_stale_jobs()
    done = Job(queue_name=name)  # a job with no run is not asked about
    runs = [reaped, cancelled, retried, released, kept, done]
    with recorded(queue) as (operations, _):
        lost = queue.lost_runs(runs)
    assert lost == {reaped.id, cancelled.id, retried.id, released.id}
    assert operations == ["running_tokens"], "one read whatever the claims"
    # A retried job that runs again is another run: the old one stays lost.
    (again,) = queue.dequeue(name, DequeueOptions.batch(1))
    assert again.id in {retried.id, released.id, reaped.id}
    assert again.id in queue.lost_runs(runs) and queue.lost_runs([again]) == set()
    assert queue.lost_runs([]) == set()


def test_the_handlers_end_is_noted_on_the_row_of_the_action_that_took_the_run(queue):
    name = unique_queue("handler_end")
    queue.enqueue_many([Job(queue_name=name) for _ in range(2)])
    cancelled, released = queue.dequeue(name, DequeueOptions.batch(2).with_lease_duration(LEASE))
    queue.cancel_job(cancelled.id, reason="not needed")
    assert queue.release_job_run(released)
    queue.clock.advance(timedelta(seconds=3))

    assert queue.record_handler_end(cancelled, HandlerEnd.CUT_OFF)
    (row,) = queue.get_job_attempts(cancelled.id)
    assert (row.handler_end, row.handler_ended_at) == ("cut_off", queue.now())
    assert row.worker == this_process() and row.error == "not needed"
    assert not queue.record_handler_end(released, HandlerEnd.STOPPED), "no row: released"
    assert not queue.record_handler_end(Job(queue_name=name), HandlerEnd.STOPPED)
