"""The dashboard's WebSocket: active staff sessions only (the pages' rule), each joined to the
channels group of its page and audience, then sent the partials the aggregator pushes.
See docs/design/dashboard.md."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from queues.dashboard.live import aggregator
from queues.dashboard.live.render import PAGES, Audience, audience_of, group_of


class DashboardConsumer(AsyncWebsocketConsumer):
    """`<mount>ws/dashboard/` pushes the overview, `<mount>ws/dashboard/<page>/` one of
    `render.PAGES` (routes in `queues.routing`)."""

    audience: Audience | None = None
    page = "overview"

    async def connect(self) -> None:
        user = self.scope.get("user")
        page = self.scope.get("url_route", {}).get("kwargs", {}).get("page", "overview")
        # The same rule as the pages (staff_member_required): an active staff user. Closing
        # before accepting refuses the handshake (HTTP 403).
        if user is None or not user.is_active or not user.is_staff or page not in PAGES:
            await self.close()
            return
        audience = await database_sync_to_async(audience_of)(user, page)
        await self.channel_layer.group_add(group_of(audience, page), self.channel_name)
        await self.accept()
        self.audience, self.page = audience, page
        aggregator.current().subscribe(audience, page)

    async def disconnect(self, code) -> None:
        if self.audience is None:
            return
        aggregator.current().unsubscribe(self.audience, self.page)
        group = group_of(self.audience, self.page)
        await self.channel_layer.group_discard(group, self.channel_name)
        self.audience = None

    async def receive(self, text_data=None, bytes_data=None) -> None:
        """The dashboard sends nothing; anything sent is ignored."""

    async def dashboard_update(self, event) -> None:
        await self.send(text_data=event["html"])
