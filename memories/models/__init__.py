from .documents import MemoryDocument, MemoryRevision
from .products import ApiKey, Product
from .scenarios import MemorySource, Scenario, ScenarioVersion
from .turns import Conversation, Event, Message, Turn
from .runonce import RunOnceRecord

__all__ = [
    "ApiKey",
    "Conversation",
    "Event",
    "MemoryDocument",
    "MemoryRevision",
    "MemorySource",
    "Message",
    "Product",
    "RunOnceRecord",
    "Scenario",
    "ScenarioVersion",
    "Turn",
]
