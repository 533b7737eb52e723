"""The tables' own rules, on the database: the tallies of a batch and of a workflow, written
once in `TalliedGroup`, are checked by each table's own constraint; the portable partial
indexes are partial where the database has partial indexes and keep their columns elsewhere,
and deconstruct under the path the migrations import."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from queues.models import Batch, Job, PortableIndex, PortableUniqueConstraint, Workflow

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("model", [Batch, Workflow])
def test_each_group_table_checks_its_tallies_under_its_own_name(model):
    name = f"{model._meta.model_name}_tallies_within_total"
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, model._meta.db_table)
    assert constraints[name]["check"]
    group = model.objects.create(name="g", total_jobs=3, completed_jobs=2, failed_jobs=1)
    assert group.pending_jobs == 0
    assert str(group) == f"g ({group.status})"
    with pytest.raises(IntegrityError), transaction.atomic():
        model.objects.filter(pk=group.pk).update(failed_jobs=2)
    group.refresh_from_db()
    assert (group.completed_jobs, group.failed_jobs) == (2, 1)


def test_a_portable_index_is_partial_only_where_the_database_has_partial_indexes():
    claim_order = next(i for i in Job._meta.indexes if i.name == "job_claim_order")
    slot = next(c for c in Job._meta.constraints if c.name == "job_unique_slot")
    # Not entered: only its SQL is wanted (SQLite's refuses to enter inside the test's atomic).
    editor = connection.schema_editor(collect_sql=True)
    index_sql = str(claim_order.create_sql(Job, editor))
    slot_sql = str(slot.create_sql(Job, editor))
    partial = connection.features.supports_partial_indexes
    assert connection.vendor != "mysql" or not partial
    assert ("WHERE" in index_sql) == partial, index_sql
    assert ("WHERE" in slot_sql) == partial, slot_sql
    assert "scheduled_at" in index_sql and "unique_slot" in slot_sql


def test_portable_indexes_deconstruct_under_queues_models():
    claim_order = next(i for i in Job._meta.indexes if isinstance(i, PortableIndex))
    slot = next(c for c in Job._meta.constraints if isinstance(c, PortableUniqueConstraint))
    assert claim_order.deconstruct()[0] == "queues.models.PortableIndex"
    assert slot.deconstruct()[0] == "queues.models.PortableUniqueConstraint"
    path, args, kwargs = claim_order.deconstruct()
    assert PortableIndex(*args, **kwargs) == claim_order
