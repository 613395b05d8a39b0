"""Export files live under VAR_DIR/exports (settings.EXPORT_DIR overrides); names are generated, never user input."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings


def export_dir() -> Path:
    directory = Path(getattr(settings, "EXPORT_DIR", "") or Path(settings.VAR_DIR) / "exports")
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def path_of(name: str) -> Path:
    return export_dir() / Path(name).name


def remove(name: str) -> int:
    """Delete one export file; 1 if it existed."""
    if not name:
        return 0
    path = path_of(name)
    try:
        path.unlink()
    except FileNotFoundError:
        return 0
    return 1
