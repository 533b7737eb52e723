"""measurearchive on a few jobs: it fills, measures, archives and measures again (no timing
is asserted: the run must only work)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from queues.models import ArchivedJob, Job

pytestmark = pytest.mark.django_db(transaction=True)


def test_measurearchive_fills_archives_and_measures_before_and_after(vendor):
    out = StringIO()
    call_command("measurearchive", fill=300, older_than="1h", repeat=1, only="overview", stdout=out)
    text = out.getvalue()
    assert text.count("claim of 50: median") == (3 if vendor == "postgresql" else 2)
    assert "== after the archive, before VACUUM" in text
    archived = ArchivedJob.objects.count()
    assert archived > 0 and f"archive: {archived:,} jobs in the archive" in text
    assert not Job.objects.filter(id__in=ArchivedJob.objects.values("id")).exists()
