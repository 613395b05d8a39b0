"""Outbound HTTP clients only (no ORM): Hinos, embeddings, summariser."""
