"""The pushed overview partial: the poll's partial, escaped, without a session's CSRF token."""

from __future__ import annotations

import pytest

from queues.api import Job, JobQueue
from queues.dashboard.live.render import audience_of, group_of, render_overview

pytestmark = pytest.mark.django_db


def test_queue_names_are_escaped_in_the_pushed_partial():
    JobQueue().enqueue(Job(queue_name="<script>alert(1)</script>", payload={}))
    [html] = render_overview([("queues.change_queuepause",)]).values()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'aria-label="Pause &lt;script&gt;' in html
    assert "csrfmiddlewaretoken" not in html


def test_audiences_and_their_groups(django_user_model):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("ops", is_staff=True)
    assert audience_of(user) == ()
    user.user_permissions.set(Permission.objects.filter(codename="change_queuepause"))
    user = django_user_model.objects.get(pk=user.pk)  # permissions are cached per instance
    assert audience_of(user) == ("queues.change_queuepause",)
    assert group_of(()) == "dashboard-overview"
    assert group_of(("queues.change_queuepause",)) == "dashboard-overview.change_queuepause"
    # The workers page checks no permission: one audience, one group for every viewer.
    assert audience_of(user, "workers") == ()
    assert group_of((), "workers") == "dashboard-workers"
