from __future__ import annotations

from datetime import UTC, datetime

import pytest

from queues.api import CronSchedule, InvalidCronSchedule


def at(*args, tz=UTC):
    return datetime(*args, tzinfo=tz)


def test_six_fields_put_seconds_first():
    schedule = CronSchedule("30 0 * * * *")
    assert schedule.next_after(at(2026, 1, 1, 10, 0, 0)) == at(2026, 1, 1, 10, 0, 30)
    assert schedule.next_after(at(2026, 1, 1, 10, 0, 30)) == at(2026, 1, 1, 11, 0, 30)


def test_five_fields_are_minutes_first():
    assert CronSchedule("*/15 * * * *").next_after(at(2026, 1, 1, 10, 7)) == at(2026, 1, 1, 10, 15)


def test_day_of_week_zero_is_sunday():
    # 2026-11-29 is a Sunday.
    assert CronSchedule("0 9 * * 0").next_after(at(2026, 11, 25)) == at(2026, 11, 29, 9)


def test_time_zone_is_applied_and_result_is_utc():
    schedule = CronSchedule("0 0 9 * * *", "Europe/Paris")
    assert schedule.next_after(at(2026, 1, 15, 12)) == at(2026, 1, 16, 8)  # CET, UTC+1
    assert schedule.next_after(at(2026, 7, 15, 12)) == at(2026, 7, 16, 7)  # CEST, UTC+2


def test_spring_forward_gap_runs_right_after_the_gap():
    # New York skips 02:00-03:00 on 2026-03-08: a 02:30 job runs at 03:00 local that day.
    schedule = CronSchedule("0 30 2 * * *", "America/New_York")
    first = schedule.next_after(at(2026, 3, 7, 12))
    assert first == at(2026, 3, 8, 7)  # 03:00 EDT
    assert schedule.next_after(first) == at(2026, 3, 9, 6, 30)  # 02:30 EDT


def test_fall_back_runs_a_fixed_time_job_once():
    # 01:30 happens twice in New York on 2026-11-01; a daily 01:30 job runs once.
    schedule = CronSchedule("0 30 1 * * *", "America/New_York")
    first = schedule.next_after(at(2026, 10, 31, 12))
    assert first == at(2026, 11, 1, 5, 30)  # 01:30 EDT
    assert schedule.next_after(first) == at(2026, 11, 2, 6, 30)  # next day, 01:30 EST


def test_fall_back_keeps_wildcard_hours_running_by_real_time():
    schedule = CronSchedule("0 0,30 * * * *", "America/New_York")
    runs = [at(2026, 11, 1, 5, 0)]  # 01:00 EDT
    for _ in range(3):
        runs.append(schedule.next_after(runs[-1]))
    assert runs[1:] == [at(2026, 11, 1, 5, 30), at(2026, 11, 1, 6, 0), at(2026, 11, 1, 6, 30)]


def test_missed_occurrences_coalesce_into_one_catch_up_run():
    schedule = CronSchedule("0 0 * * * *")
    now = at(2026, 1, 1, 10, 20)
    # The worker was down from 05:00: one catch-up run now-ish (the 10:00 slot), not five.
    assert schedule.next_run(at(2026, 1, 1, 5), now) == at(2026, 1, 1, 10)
    assert schedule.next_run(at(2026, 1, 1, 10), now) == at(2026, 1, 1, 11)


@pytest.mark.parametrize(
    ("expression", "zone"),
    [("61 * * * * *", "UTC"), ("* * *", "UTC"), ("", "UTC"), ("* * * * *", "Mars/Olympus")],
)
def test_bad_expressions_and_zones_raise_at_once(expression, zone):
    with pytest.raises(InvalidCronSchedule) as info:
        CronSchedule(expression, zone)
    assert isinstance(info.value, ValueError)
