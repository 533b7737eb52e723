"""Unique jobs: a job enqueued with a `unique_key` is inserted only if no other job of its queue
holds that key (by status, or within a period); otherwise the enqueue answers the holder's
id. The database decides who holds a key: a slot per keyed job under a unique index. See
docs/design/engine.md ("Unique jobs").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import NamedTuple
from uuid import UUID

from queues.enums import JobStatus
from queues.exceptions import InvalidJob, InvalidJobTransition
from queues.models import Job
from queues.store.base import Match, Store
from queues.validation import check_duration, validate_label

#: The statuses in which a job holds its key unless told otherwise.
LIVE_STATUSES = (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.RETRYING)
#: Every status: the job holds its key for as long as its row exists.
EVERY_STATUS = tuple(JobStatus)
#: How often an enqueue looks again after losing a race for a key before it gives up.
MAX_RACES = 10


class EnqueueResult(NamedTuple):
    """What `enqueue_unique` did: the new job's id (`created`), or that of the job that
    holds its key (not `created`)."""

    id: UUID
    created: bool


def slot_for(queue_name: str, key: str) -> str:
    # The separator is a control character, which no queue name may hold.
    return hashlib.sha256(f"{queue_name}\x1f{key}".encode()).hexdigest()


def schedule_slot(name: str) -> str:
    """The slot of a schedule declared in settings: a namespace no queue name can have."""
    return slot_for("\x00schedule", name)


def unique_key_for(payload, *fields: str) -> str:
    """A key made of the payload (or of the given fields of it): equal payloads, equal keys.
    Short payloads are their own key (canonical JSON); longer ones a digest of it."""
    if fields:
        payload = {name: payload.get(name) for name in fields}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if len(text) <= 200:
        return text
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def holds(job: Job, now: datetime) -> bool:
    """Whether `job` holds its key at `now`: in one of its statuses, or within its period."""
    if job.unique_slot is None:
        return False
    if job.status in (job.unique_statuses or ()):
        return True
    period = job.unique_period
    return period is not None and now < job.created_at + period


def prepare(jobs: Sequence[Job], declared: bool = False) -> None:
    """Check and normalise the unique keys of new jobs (already validated otherwise), and
    give each keyed job its slot. A job names a schedule only through a sync (`declared`):
    then it holds its name, for as long as its row exists."""
    for job in jobs:
        if declared:
            job.unique_key = None
            job.unique_scope = {"statuses": [s.value for s in EVERY_STATUS]}
            job.unique_slot = schedule_slot(job.schedule_name)
            continue
        if job.schedule_name is not None:
            raise InvalidJob("schedule_name is given by a sync of HAMMERWEB['SCHEDULES']")
        job.unique_slot = None
        if job.unique_key is None:
            if any(value is not None for value in (job.unique_scope or {}).values()):
                raise InvalidJob("unique_statuses and unique_period need a unique_key")
            continue
        validate_label(job.unique_key, "a unique key", InvalidJob)
        job.unique_scope = _scope(job.unique_statuses, job.unique_period)
        job.unique_slot = slot_for(job.queue_name, job.unique_key)


def _scope(statuses, period) -> dict:
    if statuses is None:
        statuses = LIVE_STATUSES
    if isinstance(statuses, str) or not all(isinstance(s, str) for s in _iterable(statuses)):
        raise InvalidJob("unique_statuses must be a list of job statuses")
    unknown = [s for s in statuses if s not in JobStatus.values]
    if unknown:
        raise InvalidJob(f"unknown status in unique_statuses: {unknown[0]!r}")
    scope: dict = {"statuses": [s.value for s in JobStatus if s in set(statuses)]}
    if period is not None:
        check_duration(period, "unique_period", InvalidJob)
        scope["period"] = period.total_seconds()
    elif not scope["statuses"]:
        raise InvalidJob("a unique key with no statuses and no period is never held")
    return scope


def _iterable(value) -> list:
    try:
        return list(value)
    except TypeError:
        raise InvalidJob("unique_statuses must be a list of job statuses") from None


# Taking keys ---------------------------------------------------------------------------------
def take_slots(
    store: Store, jobs: Sequence[Job], now: datetime, locking: bool
) -> tuple[list[Job], dict[UUID, UUID]]:
    """Inside the enqueue's transaction: which of `jobs` to insert, and the duplicates (a
    new job's id -> the holder's id). A holder that no longer holds its key loses its slot
    (locked first, and asked again under the lock). `locking` reads the holders with a
    lock, which sees the latest rows whatever the isolation level.
    """
    first: dict[str, Job] = {}
    duplicates: dict[UUID, UUID] = {}
    for job in jobs:
        if job.unique_slot is None:
            continue
        if job.unique_slot in first:  # the same key twice in one call: the first takes it
            duplicates[job.id] = first[job.unique_slot].id
        else:
            first[job.unique_slot] = job
    if first:
        match = Match(unique_slots=set(first))
        found = store.lock_jobs(match) if locking else store.find_jobs(match)
        for slot, holder in _free_stale(store, found, now).items():
            duplicates[first[slot].id] = holder
        # A second job of the key in this call answers what the first one does.
        duplicates = {new: duplicates.get(other, other) for new, other in duplicates.items()}
    # Inserted in slot order: two enqueues of the same keys then meet at the unique index
    # in one order, and neither waits for a key the other waits behind.
    fresh = sorted((job for job in jobs if job.id not in duplicates), key=_slot_order)
    for job in fresh:
        # A new job that waited for a duplicate waits for the job that does its work.
        if job.depends_on and any(UUID(p) in duplicates for p in job.depends_on):
            renamed = (str(duplicates.get(UUID(p), p)) for p in job.depends_on)
            job.depends_on = list(dict.fromkeys(renamed))
    return fresh, duplicates


def _slot_order(job: Job) -> str:
    return job.unique_slot or ""


def _free_stale(store: Store, holders: list[Job], now: datetime) -> dict[str, UUID]:
    """The slots still held among `holders` (slot -> holder id); the others are cleared."""
    held = {job.unique_slot: job.id for job in holders if holds(job, now)}
    stale = [job for job in holders if job.unique_slot not in held]
    if stale:
        match = Match(ids={job.id for job in stale}, unique_slots={j.unique_slot for j in stale})
        locked = store.lock_jobs(match)
        free = []
        for job in locked:
            if holds(job, now):  # retried meanwhile
                held[job.unique_slot] = job.id
            else:
                free.append(job.id)
        if free:
            store.update_jobs(Match(ids=free), {"unique_slot": None})
        # A stale holder missing from `locked` lost its slot meanwhile: if another job took
        # it, the insert fails on the index and the enqueue looks again.
    return held


def retake(store: Store, job: Job, now: datetime) -> dict:
    """The fields that give a retried job back the slot it lost (none if it kept it);
    refused while another job holds its key, which would run twice."""
    if job.unique_key is None or job.unique_slot is not None:
        return {}
    slot = slot_for(job.queue_name, job.unique_key)
    holder = _free_stale(store, store.find_jobs(Match(unique_slots={slot})), now)
    if holder:
        raise InvalidJobTransition(
            f"job {holder[slot]} holds the unique key {job.unique_key!r} of job {job.id}; "
            "retrying this one would do its work twice"
        )
    return {"unique_slot": slot}


def period_end(job: Job) -> datetime | None:
    """Until when the job's period holds its key (None: no period)."""
    period = job.unique_period
    return job.created_at + period if isinstance(period, timedelta) else None
