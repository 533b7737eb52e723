"""Deleting a batch or a workflow: each of its jobs is deleted as `JobQueue.delete_job` deletes
one (its dependency edges with it, the dependents outside the group that waited only for it
released), then the group's row. So a group is deleted only when each of its jobs can be: while
any is Running (a handler is working on it) the deletion is refused and nothing changes.

Many jobs at once: `JobQueue.delete_jobs` deletes a batch of ids in one transaction, with the
same refusals, and answers with a `JobDeletion` (`manage.py jobs delete` and `purge`).

This is what the admin's "delete" of a Batch or a Workflow does, instead of the cascade of
their foreign keys, which removed Running jobs behind the engine's back and left the
dependents of deleted jobs waiting for ever.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from django.db import transaction

from queues.engine import transitions
from queues.exceptions import InvalidJobTransition, JobNotFound
from queues.models import Batch, Job, Workflow


@dataclass
class JobDeletion:
    """What `JobQueue.delete_jobs` did with the ids it was given."""

    deleted: list[UUID] = field(default_factory=list)
    refused: list[UUID] = field(default_factory=list)  # Running: cancel them first
    kept: list[UUID] = field(default_factory=list)  # the caller's condition no longer held
    missing: int = 0  # ids of no job (deleted meanwhile, or never there)


_GROUPS = {Batch: ("batch", "batch_id"), Workflow: ("workflow", "workflow_id")}


def refusal(group: Batch | Workflow, using: str = "default") -> str | None:
    """Why `group` cannot be deleted now (one of its jobs cannot be), or None."""
    kind, column = _GROUPS[type(group)]
    reason = transitions.first_refusal(transitions.DELETE, _jobs(using, column, group.id))
    return None if reason is None else f"{kind} {group.name!r}: {reason}"


def delete_group(queue, group: Batch | Workflow) -> None:
    """Delete `group` and its jobs through `queue` (a `JobQueue`), in one transaction;
    `InvalidJobTransition` (and nothing deleted) while one of its jobs is Running."""
    model = type(group)
    kind, column = _GROUPS[model]
    using = queue.using
    with transaction.atomic(using=using):
        # The engine's lock order: job rows (in id order) before batch and workflow rows.
        jobs = list(_jobs(using, column, group.id).select_for_update())
        rows = model.objects.using(using).select_for_update().filter(id=group.id)
        if not list(rows.values_list("id", flat=True)):
            raise JobNotFound(f"no {kind} {group.id}")
        reason = transitions.first_refusal(transitions.DELETE, jobs)
        if reason is not None:
            raise InvalidJobTransition(f"{kind} {group.name!r} cannot be deleted: {reason}")
        for job in jobs:
            queue.delete_job(job.id)
        rows.delete()


def _jobs(using: str, column: str, group_id: UUID):
    return (
        Job.objects.using(using)
        .filter(**{column: group_id})
        .order_by("id")
        .only("id", "status", "cron_schedule")
    )
