"""A batch's or workflow's row locked and written by its primary key without the ORM's
compilation each time (`queues.store.sql.group_rows`): the same values as the ORM reads and
writes, on each database."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from django.db import transaction

from queues.models import Batch, Workflow
from queues.store.sql import group_rows

pytestmark = pytest.mark.django_db(transaction=True)

WHEN = datetime(2026, 12, 5, 18, 0, 0, 123456, tzinfo=UTC)


def _fields(row) -> dict:
    return {field.attname: getattr(row, field.attname) for field in type(row)._meta.fields}


@pytest.mark.parametrize("model", [Batch, Workflow])
def test_a_locked_row_reads_as_the_orms(model):
    row = model.objects.create(
        id=uuid.uuid4(), name="é \"quoted\" 'row'", created_at=WHEN, total_jobs=3,
        metadata={"tenant": "acme", "n": [1, 2.5, None]},
        callbacks={"success": {"queue_name": "q", "payload": {"x": 1}}},
    )  # fmt: skip
    with transaction.atomic():
        locked = group_rows.lock_row(model, "default", row.id)
        again = group_rows.lock_row(model, "default", row.id)  # the compiled read reused
    assert type(locked) is model and not locked._state.adding
    assert _fields(locked) == _fields(again) == _fields(model.objects.get(id=row.id))
    with transaction.atomic():
        assert group_rows.lock_row(model, "default", uuid.uuid4()) is None


def test_an_updated_row_holds_what_the_orm_would_write():
    row = Batch.objects.create(id=uuid.uuid4(), name="b", created_at=WHEN, total_jobs=2)
    twin = Batch.objects.create(id=uuid.uuid4(), name="b", created_at=WHEN, total_jobs=2)
    fields = {
        "completed_jobs": 2, "status": "Completed", "completed_at": WHEN,
        "callback_jobs": {"success": str(uuid.uuid4())}, "error_summary": None,
    }  # fmt: skip
    assert group_rows.update_row(Batch, "default", row.id, fields) == 1
    Batch.objects.filter(id=twin.id).update(**fields)
    written = _fields(Batch.objects.get(id=row.id))
    expected = _fields(Batch.objects.get(id=twin.id))
    assert written.pop("id") != expected.pop("id")
    assert written == expected and written["completed_at"] == WHEN
    assert group_rows.update_row(Batch, "default", row.id, {"completed_at": None}) == 1
    assert Batch.objects.get(id=row.id).completed_at is None
    assert group_rows.update_row(Batch, "default", uuid.uuid4(), {"failed_jobs": 1}) == 0


def test_a_lock_outside_a_transaction_and_an_expression_are_refused():
    from django.db import connection
    from django.db.models import F
    from django.db.transaction import TransactionManagementError

    row = Batch.objects.create(id=uuid.uuid4(), name="b", created_at=WHEN, total_jobs=2)
    if connection.features.has_select_for_update:  # SQLite locks the database, not rows
        with pytest.raises(TransactionManagementError):
            group_rows.lock_row(Batch, "default", row.id)
    with pytest.raises(TypeError, match="failed_jobs"):
        group_rows.update_row(Batch, "default", row.id, {"failed_jobs": F("failed_jobs") + 1})
    assert Batch.objects.get(id=row.id).failed_jobs == 0
