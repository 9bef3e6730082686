"""The console's websocket consumer (placeholder until the live scheduler issue lands)."""

from channels.generic.websocket import AsyncJsonWebsocketConsumer


class EventsConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        await self.close()
