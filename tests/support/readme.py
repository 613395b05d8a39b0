"""Run the shell examples of a Markdown file and compare what they print with what the file shows.

The rules (README.md states them for its readers):

- every fenced block whose info string is ``sh`` is run, in the order of the file, in ONE bash session
  (variables set in one block are there in the next); ``bash``, ``json`` and plain blocks are not run;
- a command is a line plus its continuation lines (a trailing backslash, a quote still open, or a
  `{ … }`, `do … done`, `then … fi` not yet closed);
- lines starting with ``# `` right after a command (no blank line between) show its standard output;
  a ``#`` comment after a blank line, or before any command, only explains;
- in a shown output, ``…`` stands for any text (ids, times, scores); everything else must match exactly.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

FENCE = re.compile(r"^```(\S*)\s*$")
MARK = "@@readme-step@@"


@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)
    line: int = 0  # where the command starts in the file (1-based)


def sh_blocks(text: str, info: str = "sh") -> list[tuple[int, list[str]]]:
    """(first line number, lines) of every fenced block with this info string."""
    blocks: list[tuple[int, list[str]]] = []
    inside: list[str] | None = None
    skipping = False
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if inside is None and not skipping:
            if fence and fence.group(1) == info:
                inside = []
                blocks.append((number + 1, inside))
            elif fence:
                skipping = True
        elif fence and not fence.group(1):
            inside, skipping = None, False
        elif inside is not None:
            inside.append(line)
    return blocks


OPENERS = {"{": 1, "do": 1, "then": 1, "}": -1, "done": -1, "fi": -1}


def _complete(command: str) -> bool:
    """Whole: no trailing backslash, no open quote, and every `{`, `do`, `then` closed (a function, a loop)."""
    if command.rstrip().endswith("\\"):
        return False
    try:
        tokens = shlex.split(command, comments=True)
    except ValueError:  # a quote still open
        return False
    return sum(OPENERS.get(token, 0) for token in tokens) <= 0


def steps_of(text: str) -> list[Step]:
    steps: list[Step] = []
    for start, lines in sh_blocks(text):
        pending: list[str] = []
        last: Step | None = None  # the command whose output lines may follow
        for offset, line in enumerate(lines):
            if pending:
                pending.append(line)
                if _complete("\n".join(pending)):
                    last = Step("\n".join(pending), line=start + offset - len(pending) + 1)
                    steps.append(last)
                    pending = []
                continue
            if not line.strip():
                last = None
                continue
            if line.startswith("#"):
                if last is not None and (line.startswith("# ") or line == "#"):
                    last.expected.append(line[2:])
                continue
            pending = [line]
            if _complete(line):
                last = Step(line, line=start + offset)
                steps.append(last)
                pending = []
        assert not pending, f"an unfinished command at the end of the block starting at line {start}"
    return steps


def script_of(steps: list[Step]) -> str:
    parts = []
    for number, step in enumerate(steps):
        parts.append(f"printf '\\n{MARK}{number}\\n'")
        parts.append(step.command)
    parts.append(f"printf '\\n{MARK}end\\n'")
    return "\n".join(parts) + "\n"


def run(steps: list[Step], *, cwd: Path, env: dict[str, str], timeout: float) -> list[str]:
    """Each step's standard output (trailing blank lines removed)."""
    result = subprocess.run(
        ["bash", "-c", script_of(steps)], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    chunks = re.split(rf"\n{re.escape(MARK)}(\d+|end)\n", "\n" + result.stdout)
    outputs: dict[str, str] = {}
    for index in range(1, len(chunks) - 1, 2):
        outputs[chunks[index]] = chunks[index + 1]
    if "end" not in outputs:
        raise AssertionError(f"the examples stopped early (exit {result.returncode}):\n{result.stderr[-3000:]}")
    return [outputs.get(str(n), "").rstrip("\n") for n in range(len(steps))]


def pattern_of(expected: list[str]) -> re.Pattern[str]:
    """`…` is any text; the rest matches literally."""
    text = "\n".join(expected)
    return re.compile(".*?".join(re.escape(part) for part in text.split("…")), flags=re.DOTALL)


def mismatches(steps: list[Step], outputs: list[str]) -> list[str]:
    problems = []
    for step, output in zip(steps, outputs, strict=True):
        if step.expected and not pattern_of(step.expected).fullmatch(output):
            shown = "\n".join(step.expected)
            problems.append(f"line {step.line}: {step.command}\n--- shown:\n{shown}\n--- printed:\n{output}\n")
    return problems


README_HOST = "http://127.0.0.1:8000"
README_KEY = re.compile(r"^K=mhk_…", flags=re.MULTILINE)
OTHER_KEY = re.compile(r"^O=mhk_…", flags=re.MULTILINE)  # another product's key (docs/long-term-memories.md)


def substitute(steps: list[Step], *, key: str, base_url: str, other_key: str | None = None) -> list[Step]:
    """The placeholder keys (`K=mhk_…`, and `O=mhk_…` when another product's key is given) and the host
    become the live server's."""

    def command(text: str) -> str:
        text = README_KEY.sub(f"K={key}", text)
        if other_key is not None:
            text = OTHER_KEY.sub(f"O={other_key}", text)
        return text.replace(README_HOST, base_url.rstrip("/"))

    return [Step(command(s.command), s.expected, s.line) for s in steps]
