"""One aggregator per event loop (so one per web process): while a dashboard is connected it
reads each watched page once, however many watch it, and sends each audience's partial only
when its HTML changed. On PostgreSQL a NOTIFY wakes it (at most every `PG_MIN_GAP` s, and
every `PG_FALLBACK` s anyway); elsewhere it reads every `POLL_GAP` s.
See docs/design/dashboard.md."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from weakref import WeakKeyDictionary

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import connections

from queues.dashboard.live.render import Audience, group_of, render_page
from queues.store.listen import Listener

logger = logging.getLogger(__name__)

POLL_GAP = 1.0
PG_MIN_GAP = 0.2
PG_FALLBACK = 5.0
#: The channels message type; the consumer's `dashboard_update` handles it.
MESSAGE_TYPE = "dashboard.update"

_by_loop: WeakKeyDictionary[asyncio.AbstractEventLoop, Aggregator] = WeakKeyDictionary()


def current() -> Aggregator:
    """The aggregator of the running event loop."""
    loop = asyncio.get_running_loop()
    if loop not in _by_loop:
        _by_loop[loop] = Aggregator(loop)
    return _by_loop[loop]


class Aggregator:
    def __init__(self, loop: asyncio.AbstractEventLoop, using: str = "default") -> None:
        self.loop = loop
        self.using = using
        # (page, audience) -> connected dashboards
        self.audiences: Counter[tuple[str, Audience]] = Counter()
        self.last: dict[tuple[str, Audience], str] = {}
        self.woken = asyncio.Event()
        self.task: asyncio.Task | None = None
        self.listener: Listener | None = None
        self.reads = 0  # for tests and logs

    @property
    def notified(self) -> bool:
        return connections[self.using].vendor == "postgresql"

    def subscribe(self, audience: Audience, page: str = "overview") -> None:
        self.audiences[page, audience] += 1
        self.woken.set()  # read soon: the new dashboard's page may be older than our last read
        if self.task is None or self.task.done():
            self.task = self.loop.create_task(self._run(), name="hammerweb-aggregator")

    def unsubscribe(self, audience: Audience, page: str = "overview") -> None:
        key = (page, audience)
        self.audiences[key] -= 1
        if self.audiences[key] <= 0:
            del self.audiences[key]
            self.last.pop(key, None)
        if not self.audiences:
            self.woken.set()  # let the loop see that nobody is left

    def wake_threadsafe(self) -> None:
        """Called from the LISTEN thread."""
        self.loop.call_soon_threadsafe(self.woken.set)

    async def _run(self) -> None:
        if self.notified:
            self.listener = Listener(self.wake_threadsafe, self.using)
            self.listener.start()
        try:
            # No await between this check and the exit, so a dashboard that subscribes
            # meanwhile either keeps this loop going or finds the task done and starts one.
            while self.audiences:
                self.woken.clear()
                await self._read_and_push()
                await self._wait()
        finally:
            if self.listener is not None:
                self.listener.stop()
                self.listener = None
            self.last.clear()

    async def _wait(self) -> None:
        if not self.notified:
            await asyncio.sleep(POLL_GAP)
            return
        await asyncio.sleep(PG_MIN_GAP)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.woken.wait(), PG_FALLBACK - PG_MIN_GAP)

    async def _read_and_push(self) -> None:
        by_page: dict[str, list[Audience]] = {}
        for page, audience in self.audiences:
            by_page.setdefault(page, []).append(audience)
        layer = get_channel_layer()
        for page, audiences in by_page.items():
            try:
                rendered = await database_sync_to_async(render_page)(page, audiences)
            except Exception:
                # A database hiccup must not end the push; the next turn reads again.
                logger.exception("live dashboard: reading the %s page failed", page)
                continue
            self.reads += 1
            for audience, html in rendered.items():
                key = (page, audience)
                if key in self.audiences and self.last.get(key) != html:
                    self.last[key] = html
                    message = {"type": MESSAGE_TYPE, "html": html}
                    await layer.group_send(group_of(audience, page), message)
