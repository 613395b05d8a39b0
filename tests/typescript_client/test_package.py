"""The TypeScript client (clients/typescript, `@memoryhub/client`) accepted as seed 004 accepts a package.

`npm pack` builds the real tarball; it is installed into a fresh project outside the repository, compiled with
`tsc --strict` (no `paths`), imported with no side effects, and its programs run against a live server — on the
embedded default and, in the CI's second run, on PostgreSQL + Redis with a Celery worker. The generated types
are checked to be those of the schema the server serves.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

from memories.models import MemoryRevision
from memories.services.products import product_create
from tests.support import openapi, readme

CLIENT = Path(settings.BASE_DIR) / "clients" / "typescript"
DOCS = Path(settings.BASE_DIR) / "docs" / "clients.md"
HERE = Path(__file__).parent
NPM = shutil.which("npm")
pytestmark = pytest.mark.skipif(NPM is None and not os.environ.get("MEMORYHUB_REQUIRE_SERVICES"), reason="no npm")


def npm(*args: str, cwd: Path, timeout: int = 600) -> str:
    done = subprocess.run(
        [NPM or "npm", *args, "--no-audit", "--no-fund"] if args[0] in ("ci", "install") else [NPM or "npm", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, f"npm {' '.join(args)}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def client_dependencies() -> Path:
    """clients/typescript with its locked dependencies installed (node_modules is never committed)."""
    if not (CLIENT / "node_modules" / ".package-lock.json").exists():
        npm("ci", cwd=CLIENT)
    return CLIENT


@pytest.fixture(scope="module")
def installed(client_dependencies, tmp_path_factory) -> Path:
    """A fresh project outside the repository with the packed tarball installed."""
    packs = tmp_path_factory.mktemp("pack")
    npm("pack", "--pack-destination", str(packs), cwd=client_dependencies)
    (tarball,) = packs.glob("memoryhub-client-*.tgz")
    project = tmp_path_factory.mktemp("host")
    assert settings.BASE_DIR not in project.parents
    (project / "package.json").write_text(json.dumps({"name": "host", "private": True, "type": "module"}))
    npm("install", str(tarball), "typescript@5.9.3", cwd=project)
    (project / "tsconfig.json").write_text(
        json.dumps(
            {
                "compilerOptions": {
                    "strict": True,
                    "target": "ES2022",
                    "module": "NodeNext",
                    "moduleResolution": "NodeNext",
                    "lib": ["ES2022", "DOM"],
                    "outDir": "out",
                    "skipLibCheck": False,
                },
                "include": ["*.ts"],
            }
        )
    )
    for program in ("hub.ts", "seed_flow.ts", "seed_tools.d.ts"):
        shutil.copy(HERE / program, project / program)
    for number, block in enumerate(readme.sh_blocks(DOCS.read_text(), info="ts")):
        (project / f"docs_{number}.ts").write_text(_free_names_declared("\n".join(block[1])))
    return project


# What docs/clients.md's snippets take from the surrounding program (each block is compiled on its own).
FREE = {
    "process": "{ env: Record<string, string | undefined> }",
    "baseUrl": "string",
    "userId": "string",
    "conversationId": "string",
    "hub": "import('@memoryhub/client').MemoryHub",
    "doc": "import('@memoryhub/client').MemoryDocument",
}


def _free_names_declared(code: str) -> str:
    declared = [
        f"declare const {name}: {kind};"
        for name, kind in FREE.items()
        if re.search(rf"\b{name}\b", code) and not re.search(rf"const (\{{[^}}]*\b{name}\b[^}}]*\}}|{name}\b)", code)
    ]
    return code + "\n" + "\n".join(declared) + "\nexport {};\n"


@pytest.fixture(scope="module")
def compiled(installed) -> Path:
    """The programs compiled by the installed TypeScript with --strict and no `paths`."""
    done = subprocess.run(
        [str(installed / "node_modules" / ".bin" / "tsc"), "-p", "tsconfig.json"],
        cwd=installed,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return installed


def node(project: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["node", *args], cwd=project, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})}
    )


def test_the_generated_types_are_those_of_the_served_schema(client_dependencies, tmp_path):
    """clients/typescript/openapi.json is the schema; src/schema.ts is what openapi-typescript makes of it.

    After changing the API: `python manage.py spectacular --format openapi-json --file clients/typescript/openapi.json`
    then `npm run generate` in clients/typescript.
    """
    committed = json.loads((CLIENT / "openapi.json").read_text())
    assert committed == json.loads(json.dumps(openapi.document())), "clients/typescript/openapi.json is stale"
    generated = tmp_path / "schema.ts"
    npm("exec", "--", "openapi-typescript", str(CLIENT / "openapi.json"), "-o", str(generated), cwd=CLIENT)
    assert generated.read_text() == (CLIENT / "src" / "schema.ts").read_text(), "run `npm run generate`"


def test_the_package_compiles_strictly_and_imports_silently(compiled):
    installed = compiled
    assert (installed / "out" / "hub.js").exists() and (installed / "out" / "seed_flow.js").exists()
    assert len(list((installed / "out").glob("docs_*.js"))) >= 4  # docs/clients.md's examples compile too
    config = json.loads((installed / "tsconfig.json").read_text())["compilerOptions"]
    assert config["strict"] is True and "paths" not in config and "baseUrl" not in config
    # No side effects: importing it prints nothing and fetches nothing.
    silent = node(
        installed,
        "--input-type=module",
        "-e",
        "globalThis.fetch = () => { throw new Error('fetched on import'); };"
        "const m = await import('@memoryhub/client');"
        "if (typeof m.MemoryHub !== 'function' || typeof m.memoryhubStore !== 'function') process.exit(3);",
    )
    assert (silent.returncode, silent.stdout, silent.stderr) == (0, "", "")
    # Browsers: the built files use fetch only (no Node built-ins, no require).
    for built in (installed / "node_modules" / "@memoryhub" / "client" / "dist").glob("*.js"):
        text = built.read_text()
        assert "node:" not in text and "require(" not in text and "process." not in text, built.name


def _steps(output: str) -> dict:
    return {line["step"]: line["value"] for line in map(json.loads, output.splitlines())}


@pytest.fixture
def live(live_server, request):
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        request.getfixturevalue("celery_worker_process")  # background work goes through the real worker
    product, issued = product_create(name="typescript")
    return product, {"BASE_URL": live_server.url, "API_KEY": issued.plaintext}


@pytest.mark.django_db(transaction=True)
def test_a_program_reads_writes_meets_a_conflict_and_rereads(compiled, live):
    product, env = live
    ran = node(compiled, "out/hub.js", env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    steps = _steps(ran.stdout)
    assert steps["read"] == {"revision": 0, "memory": None}
    assert steps["write"] == 1
    assert steps["conflict"] == {
        "code": "revision_conflict",
        "status": 409,
        "currentRevision": 1,
        "details": {"currentRevision": 1},
    }
    assert steps["reread"] == {"revision": 1, "memory": {"scene": "城门", "keyHolder": "用户"}}
    assert steps["retried"] == [2, 2]  # one Idempotency-Key: the retry answered the first write
    assert steps["revisions"] == [2, 1]  # page by page (limit 1), newest first
    assert steps["unauthenticated"] == {"code": "unauthenticated", "status": 401}
    # Ids of dots throw before fetch (hub.memory at once, hub.api through the middleware); nothing was erased.
    assert steps["dotIds"] == {"refused": ["memory", "mintToolToken", "api", "empty", "slash"], "fetched": 0}
    assert steps["dotIdsKept"] == {"scene": "塔顶"}
    stored = MemoryRevision.objects.filter(product=product).order_by("revision")
    assert [r.revision for r in stored] == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_the_seed_tools_reread_after_a_conflict_through_memoryhub_store(compiled, live):
    product, env = live
    ran = node(compiled, "out/seed_flow.js", env=env)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    steps = _steps(ran.stdout)
    assert steps["empty"] == {"revision": 0, "memory": None}
    assert steps["read"] == {"revision": 1, "memory": {"scene": "城门", "keyHolder": "用户"}}
    assert steps["conflict"] == {"code": "revision_conflict", "currentRevision": 2}
    assert steps["reread"] == {"revision": 2, "memory": {"scene": "城门", "keyHolder": "用户", "weather": "rain"}}
    assert steps["saved"] == {"revision": 3}
    # Decided again on the re-read: the other writer's change survives, and the stale write never landed.
    assert steps["final"] == {"revision": 3, "memory": {"scene": "城门", "keyHolder": "守卫", "weather": "rain"}}
    stored = MemoryRevision.objects.filter(product=product).order_by("revision")
    assert [(r.revision, r.actor_type) for r in stored] == [(1, "tool"), (2, "api_key"), (3, "tool")]
