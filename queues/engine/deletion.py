"""Deleting a batch or a workflow through the store: each of its jobs as `JobQueue.delete_jobs`
deletes them (edges, history, dependents outside released), then the group's row, in one
transaction; refused, and nothing changed, while any job is Running. Also `JobDeletion`, the
answer of `delete_jobs`. See docs/design/maintenance.md."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from queues.engine import transitions
from queues.exceptions import InvalidJobTransition, JobNotFound
from queues.models import Batch, Job, Workflow
from queues.store import Store, sql_store
from queues.store.base import Match


@dataclass
class JobDeletion:
    """What `JobQueue.delete_jobs` did with the ids it was given."""

    deleted: list[UUID] = field(default_factory=list)
    refused: list[UUID] = field(default_factory=list)  # Running: cancel them first
    kept: list[UUID] = field(default_factory=list)  # the caller's condition no longer held
    missing: int = 0  # ids of no job (deleted meanwhile, or never there)


_GROUPS = {Batch: ("batch", "batch_id"), Workflow: ("workflow", "workflow_id")}


def refusal(group: Batch | Workflow, store: Store | None = None) -> str | None:
    """Why `group` cannot be deleted now (one of its jobs cannot be), or None; read through
    `store` (default: the SQL store of the group's database)."""
    kind, column = _GROUPS[type(group)]
    store = store or sql_store(group._state.db or "default")
    jobs = store.find_jobs(Match(**{column: group.id}))
    reason = transitions.first_refusal(transitions.DELETE, _in_id_order(jobs))
    return None if reason is None else f"{kind} {group.name!r}: {reason}"


def delete_group(queue, group: Batch | Workflow) -> None:
    """Delete `group` and its jobs through `queue` (a `JobQueue`), in one transaction;
    `InvalidJobTransition` (and nothing deleted) while one of its jobs is Running."""
    model = type(group)
    kind, column = _GROUPS[model]
    store = queue.store

    def work() -> None:
        # The engine's lock order: job rows (in id order) before batch and workflow rows.
        jobs = _in_id_order(store.lock_jobs(Match(**{column: group.id})))
        if store.lock_group(model, group.id) is None:
            raise JobNotFound(f"no {kind} {group.id}")
        reason = transitions.first_refusal(transitions.DELETE, jobs)
        if reason is not None:
            raise InvalidJobTransition(f"{kind} {group.name!r} cannot be deleted: {reason}")
        if jobs:
            queue.delete_jobs([job.id for job in jobs])
        store.delete_group(model, group.id)

    store.atomic(work)


def _in_id_order(jobs: list[Job]) -> list[Job]:
    """Sorted as the queue sorts ids (the store's own order may differ: MariaDB's)."""
    return sorted(jobs, key=lambda job: str(job.id))
