from __future__ import annotations

import pytest
from django.test import modify_settings

from workers.api import autodiscover, handler_for, job_handler
from workers.registry import unregister


@modify_settings(INSTALLED_APPS={"append": "demo"})
def test_autodiscover_finds_the_handlers_in_installed_apps_jobs_modules():
    autodiscover()
    from demo import jobs

    for name in jobs.DEMO_QUEUES:
        assert handler_for(name) is not None
    assert handler_for("emails") is jobs.send_email


def test_a_queue_has_one_handler_unless_replaced():
    def first(job):
        return 1

    def second(job):
        return 2

    job_handler("registry_test")(first)
    try:
        job_handler("registry_test")(first)  # the same function again: a no-op
        with pytest.raises(ValueError, match="already has a handler"):
            job_handler("registry_test")(second)
        assert handler_for("registry_test") is first
        job_handler("registry_test", replace=True)(second)
        assert handler_for("registry_test") is second
    finally:
        unregister("registry_test")
    assert handler_for("registry_test") is None


def test_bad_queue_names_are_refused_at_registration():
    with pytest.raises(ValueError):
        job_handler("")
