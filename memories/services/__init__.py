"""Writes, named <entity>_<action>, keyword-only arguments."""
