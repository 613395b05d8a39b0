"""Reads; every selector takes the product, so a foreign id is simply not found."""
