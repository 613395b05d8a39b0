"""Webhooks' writes: endpoints (registration, rotation) and deliveries (emit, attempt, retry, redeliver)."""
