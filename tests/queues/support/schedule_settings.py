"""Settings for the processes the schedule tests start: the tests', with
`HAMMERWEB["SCHEDULES"]` read from the JSON in HAMMERWEB_TEST_SCHEDULES."""

from __future__ import annotations

import json
import os

from tests.settings import *  # noqa: F403

HAMMERWEB = {"SCHEDULES": json.loads(os.environ.get("HAMMERWEB_TEST_SCHEDULES", "{}"))}
