from .documents import IdempotencyRecord, MemoryDocument, MemoryRevision
from .products import ApiKey, Product
from .scenarios import MemorySource, Scenario, ScenarioVersion
from .turns import Conversation, Event, Message, Turn
from .hinos import FailedHinosCommit, HinosClaim  # noqa: F401  the Hinos server's claims
from .longterm import AdmissionRefusal, EmbeddingIndex, LongTermMemory, LongTermMemoryVersion, MemoryOperation, Task, TaskCheckpoint, TaskReport  # noqa: F401

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
