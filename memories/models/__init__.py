from .documents import IdempotencyRecord, MemoryDocument, MemoryRevision
from .products import ApiKey, Product

__all__ = ["ApiKey", "IdempotencyRecord", "MemoryDocument", "MemoryRevision", "Product"]
