"""The sample program, as a product would use the package: type-checked with `mypy --strict` against the
installed wheel (copied out of the repository first, so nothing resolves to the source tree), then run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import LiveServer

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "first_program.py"


def test_mypy_strict_over_the_example(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE, tmp_path / "first_program.py")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "first_program.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout


def test_the_example_runs_against_the_live_server(tmp_path: Path, live_server: LiveServer) -> None:
    shutil.copy(EXAMPLE, tmp_path / "first_program.py")
    env = {**os.environ, "MEMORYHUB_URL": live_server.url, "MEMORYHUB_API_KEY": live_server.api_key}
    result = subprocess.run(
        [sys.executable, "first_program.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok: revision 1, 1 revision(s)")


def test_importing_the_package_has_no_side_effects(tmp_path: Path) -> None:
    code = (
        "import logging, sys; import memoryhub_client; print(len(logging.getLogger().handlers), 'httpx' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert (result.returncode, result.stdout.strip(), result.stderr) == (0, "0 True", "")
