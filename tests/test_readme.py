"""README.md's `sh` blocks run as written against a live server and print what the README shows.

The rules are in tests/support/readme.py and stated in the README ("Every `sh` block below runs as written").
On the embedded default the background work runs in-process; with a broker a real Celery worker does it, and
the README's own wait loop (poll `memoryWrite` until it is no longer `pending`) is what makes the next block
see the result, as it would for a newcomer.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings

from memories.services.products import product_create
from tests.support import readme

README = Path(settings.BASE_DIR) / "README.md"


@pytest.mark.skipif(shutil.which("curl") is None, reason="the README's examples use curl")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "document", ["README.md", "docs/tables.md", "docs/roleplay.md", "docs/long-term-memories.md", "docs/history.md"]
)
def test_every_sh_block_prints_what_it_shows(document, live_server, request, tmp_path):
    """The README's blocks and the sessions of the listed docs, each with a fresh product and key (and a
    second product's key for the blocks that show what another product cannot see)."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("celery_worker_process")  # the background work goes through the real worker
    _, issued = product_create(name="readme")
    _, other = product_create(name="readme-other")
    text = (Path(settings.BASE_DIR) / document).read_text()
    steps = readme.substitute(
        readme.steps_of(text), key=issued.plaintext, base_url=live_server.url, other_key=other.plaintext
    )
    assert steps, f"{document} has no sh block"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
        "NO_PROXY": "*",
    }
    outputs = readme.run(steps, cwd=tmp_path, env=env, timeout=300)
    problems = readme.mismatches(steps, outputs)
    assert not problems, "\n".join(problems)


def test_the_readme_runs_a_newcomer_from_the_first_write_to_a_prompt_with_a_table_row():
    text = README.read_text()
    steps = readme.steps_of(text)
    commands = "\n".join(s.command for s in steps)
    assert "Every `sh` block below runs as written" in text and "tests/test_readme.py" in text
    for needed in ("/memory", "$S ", "/turns ", "/complete", "/accept", "/memories/search", "plugin-defaults"):
        assert needed in commands, needed
    assert sum(1 for s in steps if s.expected) >= 15  # outputs are shown, and therefore checked
    shown = "\n".join("\n".join(s.expected) for s in steps)
    assert '0,<user>,"生锈的铜钥匙, 柄上刻着 N",塔顶钥匙,守塔人托付的' in shown
    assert "mhk_…" in text and "http://127.0.0.1:8000" in text  # what the test substitutes


def test_the_long_term_memories_sessions_are_runnable_blocks_with_their_outputs():
    """docs/long-term-memories.md's sessions are `sh` blocks checked above, not captures that drift (issue 30):
    every HTTP call shows what it prints, and the only `console` block left is a benchmark's figures."""
    text = (Path(settings.BASE_DIR) / "docs/long-term-memories.md").read_text()
    steps = readme.steps_of(text)
    calls = [s for s in steps if s.command.startswith(("curl ", "sleep "))]
    assert len(calls) >= 40
    assert all(s.expected for s in calls), [s.line for s in calls if not s.expected]
    consoles = [lines[0] for _, lines in readme.sh_blocks(text, "console")]
    assert consoles == ["$ .venv/bin/python bench/admission.py"], consoles
    shown = "\n".join("\n".join(s.expected) for s in steps)
    for field in ('"expiresAt":', '"supersededBy":', '"path":"/', '"why":{…}'):
        assert field in shown, field  # today's fields, as the server prints them (compact JSON)
    assert '{\n  "' not in shown  # no indented JSON that no command prints


# ------------------------------------------------------------------------------ the runner's own rules

SAMPLE = """
Intro.

```sh
A=1   # a comment after a command is bash's business
echo $A
# 1

# explains the next command; not an output
printf 'x\\ny\\n'
# x
# y
echo "a
b"
# a
# b
echo one \\
  two
# one two
twice() {
  echo "$1$1"
}
twice ab
# abab
```

```bash
echo never run
# 2
```

```json
{"x": 1}
```

```sh
echo $A-still-set
# 1-…
```
"""


def test_steps_outputs_and_comments():
    steps = readme.steps_of(SAMPLE)
    assert [s.command for s in steps] == [
        "A=1   # a comment after a command is bash's business",
        "echo $A",
        "printf 'x\\ny\\n'",
        'echo "a\nb"',
        "echo one \\\n  two",
        'twice() {\n  echo "$1$1"\n}',
        "twice ab",
        "echo $A-still-set",
    ]
    assert [s.expected for s in steps] == [[], ["1"], ["x", "y"], ["a", "b"], ["one two"], [], ["abab"], ["1-…"]]
    assert steps[1].line == 6


def test_the_blocks_run_in_one_session_and_match(tmp_path):
    steps = readme.steps_of(SAMPLE)
    outputs = readme.run(steps, cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout=30)
    assert outputs == ["", "1", "x\ny", "a\nb", "one two", "", "abab", "1-still-set"]
    assert readme.mismatches(steps, outputs) == []


def test_an_output_that_differs_is_reported_with_its_line(tmp_path):
    steps = readme.steps_of("```sh\necho 2\n# 1\n```\n")
    problems = readme.mismatches(steps, readme.run(steps, cwd=tmp_path, env={"PATH": os.environ["PATH"]}, timeout=30))
    assert len(problems) == 1 and problems[0].startswith("line 2: echo 2")


def test_the_ellipsis_stands_for_any_text_and_nothing_else_is_loose():
    pattern = readme.pattern_of(['{"id":"mem_…","score":0.588…}'])
    assert pattern.fullmatch('{"id":"mem_1a2b","score":0.588216}')
    assert not pattern.fullmatch('{"id":"mem_1a2b","score":0.7}')
    assert not readme.pattern_of(["a.c"]).fullmatch("abc")  # regex characters are literal


def test_the_key_and_the_host_are_substituted():
    steps = readme.steps_of("```sh\nK=mhk_…   # the key\nO=mhk_…\nM=http://127.0.0.1:8000/v1\n```\n")
    done = readme.substitute(steps, key="mhk_real", base_url="http://localhost:5555/", other_key="mhk_other")
    assert [s.command for s in done] == ["K=mhk_real   # the key", "O=mhk_other", "M=http://localhost:5555/v1"]
    assert readme.substitute(steps, key="mhk_real", base_url="http://x")[1].command == "O=mhk_…"
