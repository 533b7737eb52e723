"""The callbacks of batches and workflows (`queues.callbacks`) enqueued in the transaction that
writes the status that calls for them, under the group row's lock, through the store's job
insert: each event's once, recorded on the row (`callback_jobs`). Every write of a group's
tallies or status comes here: `effects.apply_tallies`, and an empty group's at enqueue.
See docs/design/engine.md ("Effects and tallies").
"""

from __future__ import annotations

from datetime import datetime

from queues import signals, tracing
from queues.callbacks import callback_job, tally
from queues.engine.tallies import callbacks_due
from queues.store.base import Store


def with_callbacks(store: Store, group, fields: dict, now: datetime, sender=None) -> dict:
    """`fields`, about to be written to `group` (its row, locked), and the callbacks they
    call for enqueued and recorded in them (`sender`: the queue's class, for
    `job_enqueued`)."""
    declared = group.callbacks or {}
    if not declared:
        return fields
    enqueued = dict(group.callback_jobs or {})
    due = [e for e in callbacks_due(group, fields) if e in declared and e not in enqueued]
    if not due:
        return fields
    jobs = [callback_job(declared[event], tally(group, fields, event), now) for event in due]
    with tracing.enqueue_spans(jobs):  # its own enqueue span: the run links to it
        store.insert_jobs(jobs)
    signals.enqueued(store, sender, jobs)
    enqueued.update((event, str(job.id)) for event, job in zip(due, jobs, strict=True))
    return {**fields, "callback_jobs": enqueued}
