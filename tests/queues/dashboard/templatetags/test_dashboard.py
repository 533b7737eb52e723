from __future__ import annotations

from datetime import timedelta

from django.template import Context, Template
from django.utils import timezone

from queues.templatetags.dashboard import ago, compact, duration, preview, sparkline


def test_compact_numbers():
    assert [compact(n) for n in (0, 950, 1000, 1234, 12_345, 1_250_000, 2_000_000_000)] == [
        "0",
        "950",
        "1k",
        "1.2k",
        "12.3k",
        "1.2M",
        "2G",
    ]
    assert compact(None) == "0"


def test_ago_and_in():
    now = timezone.now()
    assert ago(now - timedelta(seconds=3), now) == "3 s ago"
    assert ago(now - timedelta(minutes=5, seconds=10), now) == "5 min ago"
    assert ago(now - timedelta(hours=2, minutes=3), now) == "2 h 3 min ago"
    assert ago(now + timedelta(minutes=10), now) == "in 10 min"
    assert ago(now, now) == "just now"
    assert ago(None) == "—"


def test_duration():
    assert duration(timedelta(milliseconds=42)) == "42 ms"
    assert duration(timedelta(seconds=3.25)) == "3.2 s"
    assert duration(timedelta(minutes=4)) == "4 min"
    assert duration(None) == "—"


def test_preview_cuts_long_payloads():
    assert preview({"a": 1}) == '{"a": 1}'
    assert len(preview({"text": "x" * 500})) == 100


def test_sparkline_is_an_svg_polyline_of_numbers():
    svg = str(sparkline([0, 5, 10]))
    assert svg.startswith('<svg class="spark"')
    assert 'aria-label="15 completed in the last 3 full minutes"' in svg
    assert 'points="0.0,23.0 60.0,12.0 120.0,1.0"' in svg
    assert sparkline([]) == ""


def test_pretty_json_is_escaped_by_the_template():
    html = Template("{% load dashboard %}{{ v|pretty_json }}").render(Context({"v": {"h": "<b>&"}}))
    assert "&lt;b&gt;&amp;" in html and "<b>" not in html
