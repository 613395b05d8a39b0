"""Reading an export file for an import: streamed, never decompressed whole, with caps on what it may hold.

A gzip file of a few hundred kilobytes can hold gigabytes (a "gzip bomb"), so the file is read line by line
from the decompressing stream and refused as soon as it passes IMPORT_MAX_BYTES decompressed, a line passes
IMPORT_MAX_LINE_BYTES or the records pass IMPORT_MAX_RECORDS (docs/data-lifecycle.md).
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from django.conf import settings

from memoryhub.errors import InvalidRequest, PayloadTooLarge

from .export import FORMAT, FORMAT_VERSION


@dataclass(frozen=True)
class ImportLimits:
    upload_bytes: int
    decompressed_bytes: int
    line_bytes: int
    records: int

    @classmethod
    def configured(cls) -> ImportLimits:
        return cls(
            upload_bytes=settings.IMPORT_MAX_UPLOAD_BYTES,
            decompressed_bytes=settings.IMPORT_MAX_BYTES,
            line_bytes=settings.IMPORT_MAX_LINE_BYTES,
            records=settings.IMPORT_MAX_RECORDS,
        )

    def as_details(self) -> dict[str, int]:
        return {
            "maxUploadBytes": self.upload_bytes,
            "maxBytes": self.decompressed_bytes,
            "maxLineBytes": self.line_bytes,
            "maxRecords": self.records,
        }


def _too_large(message: str, limits: ImportLimits) -> PayloadTooLarge:
    return PayloadTooLarge(message, details=limits.as_details(), code="import_too_large")


def _invalid(message: str) -> InvalidRequest:
    return InvalidRequest(message, code="invalid_export")


CHUNK_BYTES = 256 * 1024


def _raw_lines(content: bytes, limits: ImportLimits) -> Iterator[bytes]:
    """The decompressed non-blank lines, read a chunk at a time, counting bytes and lines as they come.

    Blank lines count as lines too, so a file of newlines cannot keep the loop busy past the record limit.
    """
    total = lines = 0
    pending = b""
    stream = gzip.GzipFile(fileobj=io.BytesIO(content))
    try:
        while chunk := stream.read(CHUNK_BYTES):
            total += len(chunk)
            if total > limits.decompressed_bytes:
                raise _too_large(f"the export file holds more than {limits.decompressed_bytes} bytes", limits)
            parts = (pending + chunk).split(b"\n")
            pending = parts.pop()
            lines += len(parts)
            if lines > limits.records + 1:  # + the header
                raise _too_large(f"the export file holds more than {limits.records} records", limits)
            if len(pending) > limits.line_bytes or any(len(part) > limits.line_bytes for part in parts):
                raise _too_large(f"a line of the export file is longer than {limits.line_bytes} bytes", limits)
            yield from (part for part in parts if part.strip())
    except (OSError, EOFError, zlib.error) as exc:
        raise _invalid(f"not a gzip JSON Lines export file: {exc}") from exc
    if pending.strip():
        yield pending


def _parsed(line: bytes) -> object:
    try:
        return json.loads(line.decode("utf-8"), parse_constant=_refuse_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError) as exc:
        raise _invalid(f"not a gzip JSON Lines export file: {exc}") from exc


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def check_header(header: object) -> dict:
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise _invalid("the first line is not a memoryhub export header")
    if header.get("formatVersion") != FORMAT_VERSION:
        raise _invalid(f"unsupported formatVersion {header.get('formatVersion')!r}")
    return header


def export_lines(content: bytes, limits: ImportLimits | None = None) -> Iterator[object]:
    """The header (checked), then every record line parsed; refused past the limits, whatever comes first."""
    limits = limits or ImportLimits.configured()
    count = 0
    for line in _raw_lines(content, limits):
        value = _parsed(line)
        if count == 0:
            check_header(value)
        count += 1
        yield value
    if count == 0:
        raise _invalid("the first line is not a memoryhub export header")


def check_export(content: bytes) -> dict:
    """Read the whole file once (streamed) and answer its header: every limit is checked before it is kept."""
    lines = export_lines(content)
    header = next(lines)
    for number, line in enumerate(lines, start=2):
        if not isinstance(line, dict) or not isinstance(line.get("kind"), str):
            raise _invalid(f'line {number} is not a record (an object with a string "kind")')
    assert isinstance(header, dict)
    return header


def records_of(content: bytes) -> Iterator[object]:
    """The record lines of a checked file (the header skipped)."""
    lines = export_lines(content)
    next(lines)
    yield from lines
