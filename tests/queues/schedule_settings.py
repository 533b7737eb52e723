"""Settings for the processes the schedule tests start: the project's, with
`HAMMERWEB["SCHEDULES"]` read from the JSON in HAMMERWEB_TEST_SCHEDULES."""

from __future__ import annotations

import json
import os

from hammerweb.settings import *  # noqa: F403

HAMMERWEB = {"SCHEDULES": json.loads(os.environ.get("HAMMERWEB_TEST_SCHEDULES", "{}"))}
