"""An event recorder to pass as ``hooks=``, or to register on a real hook registry.

It is ``amplifier_core.testing.EventRecorder`` (``events``, ``get_events``, ``clear``; ``emit`` records a copy
of each payload and returns ``HookResult(action="continue")``) with four additions: ``only=`` keeps just the
named events, ``payloads(name)`` lists one event's payloads, ``listen(hooks, *names)`` registers the
recorder on a ``HookRegistry`` (e.g. a ``MockCoordinator``'s) for events other modules emit there, and
``list_handlers`` says, as a ``HookRegistry`` does, that no handler could steer what it records.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from amplifier_core.models import HookResult
from amplifier_core.testing import EventRecorder as _CoreEventRecorder

__all__ = ["EventRecorder"]


class EventRecorder(_CoreEventRecorder):
    def __init__(self, only: Iterable[str] | None = None) -> None:
        super().__init__()
        self.only = None if only is None else frozenset(only)

    async def emit(self, event: str, data: dict[str, Any]) -> HookResult:
        if self.only is not None and event not in self.only:
            return HookResult(action="continue")
        return await super().emit(event, data)

    def list_handlers(self, event: str | None = None) -> dict[str, list[str]]:
        """No handlers, as ``HookRegistry.list_handlers`` says it: the recorder answers every event with
        ``continue``, so nothing it records waits to be steered (a ``context:pre_compact`` focus, a ``deny``)."""
        return {event: []} if event is not None else {}

    def payloads(self, event: str) -> list[dict[str, Any]]:
        """The payloads of every ``event`` recorded, oldest first."""
        return [data for name, data in self.events if name == event]

    def listen(self, hooks: Any, *events: str) -> None:
        """Record ``events`` emitted on the hook registry ``hooks`` (``hooks.register(event, handler, name=)``)."""
        for event in events:
            hooks.register(event, self.emit, name=f"event-recorder-{event}")
