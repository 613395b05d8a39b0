from .documents import IdempotencyRecord, MemoryDocument, MemoryRevision
from .products import ApiKey, Product
from .scenarios import MemorySource, Scenario, ScenarioVersion
from .turns import Conversation, Event, Message, Turn

__all__ = [
    "ApiKey",
    "Conversation",
    "Event",
    "IdempotencyRecord",
    "MemoryDocument",
    "MemoryRevision",
    "MemorySource",
    "Message",
    "Product",
    "Scenario",
    "ScenarioVersion",
    "Turn",
]
