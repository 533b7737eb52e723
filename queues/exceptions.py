"""Errors raised by the queue. Every one is a `QueueError`; bad input (`InvalidJob`: nothing
was written) is also a `ValueError`, and a missing job also a `LookupError`.
See docs/design/vocabulary.md."""

from __future__ import annotations


class QueueError(Exception):
    """Base class of every error the queue raises. Do not raise directly."""


class InvalidJob(QueueError, ValueError):
    """A job (or its options) failed validation; nothing was written."""


class InvalidQueueName(InvalidJob):
    pass


class InvalidPayload(InvalidJob):
    pass


class InvalidPriority(InvalidJob):
    pass


class InvalidCronSchedule(InvalidJob):
    pass


class InvalidWorkflow(InvalidJob):
    """A workflow has a cycle, or a job depends on a job that does not exist."""


class InvalidBatch(InvalidJob):
    """A batch is empty, too large, or mixes queues."""


class InvalidTags(InvalidJob):
    """A job's tags or meta are malformed (see `queues.tags`)."""


class InvalidSchedule(InvalidJob):
    """A schedule declared in settings (`HAMMERWEB["SCHEDULES"]`) is malformed."""


class InvalidQueueConfig(QueueError, ValueError):
    """A queue's configuration (`JobQueue.queue_config`) was given a bad value; nothing was
    written."""


class JobNotFound(QueueError, LookupError):
    pass


class InvalidJobTransition(QueueError):
    """The job is not in a state that allows this action (e.g. retrying a completed job)."""


class EngineError(QueueError):
    """The database failed; the original error is the `__cause__`."""


class UnsupportedDatabase(EngineError):
    pass


class TransactionPoolingError(EngineError):
    """The engine's PostgreSQL session state was shared with another client, as only a
    transaction-mode pooler does, while `HAMMERWEB["PG_TRANSACTION_POOLING"]` says there is
    none: the message names the setting."""
