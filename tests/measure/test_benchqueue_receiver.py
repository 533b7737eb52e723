"""`benchqueue --receiver`: the same figures with a receiver on every lifecycle signal, which
hears every job's signals and is disconnected afterwards."""

from __future__ import annotations

import json
from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command

from hammerweb.measure.management.commands import benchqueue
from queues import signals

pytestmark = pytest.mark.django_db(transaction=True)


def test_benchqueue_with_a_receiver(monkeypatch):
    heard = Counter()
    monkeypatch.setattr(benchqueue, "_heard", lambda signal, sender, **kw: heard.update([signal]))
    out = StringIO()
    # The runworker figures are left out: their children do not hear this process's receiver.
    call_command(
        "benchqueue", jobs=5, json=True, receiver=True, no_runworker=True, stdout=out,
        stderr=StringIO(),
    )  # fmt: skip
    figures = json.loads(out.getvalue())["figures"]
    assert all(row["jobs"] == 5 for row in figures)
    # The loops (1 and 100, on a plain and on a limited queue) and the three workers complete
    # 5 jobs each; the claims only claim.
    assert heard[signals.job_succeeded] == 5 * (4 + 3)
    assert heard[signals.job_started] >= heard[signals.job_succeeded]
    assert not any(signal.receivers for signal in signals.ALL)
