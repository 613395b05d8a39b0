"""LoCoMo dialog-turn retrieval through the public HTTP API, beside the paper's Table 3 (DRAGON) line.

    .venv/bin/python bench/locomo.py [--file F] [--base-url URL --api-key KEY] [--modes hybrid,keyword,semantic]

Reads a LoCoMo file (default ../shared/data/locomo/locomo10-dev.json; never copied into the repository) and,
unless a URL and key are given, starts its own server on the embedded default (SQLite, no Redis, background
work in-process) in a temporary directory. Each conversation becomes one user, each session one conversation,
imported with POST …/messages/import: clientId = the turn's dia_id, the session's date as the time (turns a
second apart, in order), speaker_a as `user` and speaker_b as `assistant`, each with its name, an image turn's
blip_caption kept in its text (`[shares …]`, as the paper's unit). Every question is asked with POST
…/history/search (limit 50) as it is written. Recall as ../shared/data/locomo/SOURCE.md says: per question,
evidence dia_ids in the top k ÷ evidence ids (no evidence: 1), the mean over questions, in percent.
The last line printed is `LOCOMO dialog hybrid R@5=… R@10=… R@25=… R@50=…`.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = ROOT.parent / "shared" / "data" / "locomo" / "locomo10-dev.json"
KS = (5, 10, 25, 50)
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain", 5: "adversarial"}
PAPER_DRAGON = {5: 56.7, 10: 66.2, 25: 76.7, 50: 82.7}  # Table 3, dialog turns, all ten conversations
BATCH = 1000


def session_time(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict) -> str:
    caption = turn.get("blip_caption")
    return f"{turn['text']} [shares {caption}]" if caption else turn["text"]


def sessions(conversation: dict) -> list[tuple[str, datetime, list[dict]]]:
    found = []
    for key, turns in conversation.items():
        if key.startswith("session_") and not key.endswith("date_time") and isinstance(turns, list):
            number = int(key.split("_")[1])
            found.append((number, f"session-{number}", session_time(conversation[f"{key}_date_time"]), turns))
    return [(name, when, turns) for _, name, when, turns in sorted(found)]


def import_sample(http: httpx.Client, user: str, sample: dict) -> int:
    conversation = sample["conversation"]
    roles = {conversation["speaker_a"]: "user", conversation["speaker_b"]: "assistant"}
    total = 0
    for name, start, turns in sessions(conversation):
        messages = [
            {
                "clientId": turn["dia_id"],
                "role": roles.get(turn["speaker"], "user"),
                "name": turn["speaker"],
                "content": turn_text(turn),
                "createdAt": (start + timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
            }
            for i, turn in enumerate(turns)
        ]
        for offset in range(0, len(messages), BATCH):
            for attempt in range(20):  # SQLite has one writer: the server's embedding thread may hold it (503)
                response = http.post(
                    f"/v1/users/{user}/conversations/{name}/messages/import",
                    json={"messages": messages[offset : offset + BATCH]},
                )
                if response.status_code != 503:
                    break
                time.sleep(0.5 * (attempt + 1))
            if response.status_code >= 400:
                raise SystemExit(f"import refused: {response.status_code} {response.text[:500]}")
        total += len(messages)
    return total


def wait_embedded(http: httpx.Client, users: list[str], timeout: float = 3600) -> None:
    deadline = time.monotonic() + timeout
    for user in users:
        while (status := http.get(f"/v1/users/{user}/history").raise_for_status().json())["pending"]:
            if time.monotonic() > deadline:
                raise SystemExit(f"vectors still pending for {user}: {status}")
            time.sleep(0.5)


def recall(evidence: list[str], ranked: list[str], k: int) -> float:
    if not evidence:
        return 1.0
    top = set(ranked[:k])
    return sum(1 for item in evidence if item in top) / len(evidence)


def evaluate(http: httpx.Client, samples: list[tuple[str, dict]], mode: str) -> tuple[dict, list[float]]:
    scores: dict[object, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    latencies = []
    questions = [(user, qa) for user, sample in samples for qa in sample["qa"]]
    for user, qa in tqdm(questions, desc=f"{mode:>8}", unit="q", file=sys.stderr):
        started = time.perf_counter()
        response = http.post(
            f"/v1/users/{user}/history/search", json={"query": qa["question"], "mode": mode, "limit": 50}
        )
        latencies.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        ranked = [hit["clientId"] for hit in response.json()["results"]]
        for k in KS:
            value = recall(qa.get("evidence") or [], ranked, k)
            scores[qa.get("category")][k].append(value)
            scores["overall"][k].append(value)
    return scores, latencies


def line(label: str, values: dict[int, float], count: int | str = "") -> str:
    return (
        f"  {label:<22} " + "  ".join(f"R@{k}={values[k]:5.1f}" for k in KS) + (f"  (n={count})" if count != "" else "")
    )


def report(mode: str, scores: dict, latencies: list[float]) -> dict[int, float]:
    print(f"\nLoCoMo dialog turns, mode {mode}")
    for category, label in CATEGORIES.items():
        if category in scores:
            means = {k: 100 * statistics.fmean(scores[category][k]) for k in KS}
            print(line(f"{category} {label}", means, len(scores[category][KS[0]])))
    overall = {k: 100 * statistics.fmean(scores["overall"][k]) for k in KS}
    print(line("overall", overall, len(scores["overall"][KS[0]])))
    print(line("paper DRAGON (Table 3)", PAPER_DRAGON))
    ordered = sorted(latencies)
    p50, p95 = statistics.median(ordered), ordered[int(0.95 * (len(ordered) - 1))]
    print(f"  search latency (HTTP, limit 50): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    return overall


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def own_server(workdir: Path) -> tuple[subprocess.Popen, str, str]:
    """The embedded default: a fresh SQLite file, no Redis, background work on the server's own threads."""
    env = {
        **os.environ,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": f"sqlite:///{workdir / 'locomo.sqlite3'}",
    }
    for name in ("REDIS_URL", "CELERY_BROKER_URL", "QDRANT_URL"):
        env.pop(name, None)
    env["MEMORYHUB_RATE_LIMIT"] = "100000000/min"
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    created = subprocess.run(
        [*manage, "create_product", "--name", "locomo-bench", "--json"],
        env=env,
        check=True,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    key = json.loads(created.stdout.strip().splitlines()[-1])["apiKey"]
    port = free_port()
    server = subprocess.Popen(
        [*manage, "runserver", "--noreload", "--nothreading", f"127.0.0.1:{port}"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=open(os.environ.get("LOCOMO_SERVER_LOG", os.devnull), "w"),  # noqa: SIM115
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return server, url, key
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    server.kill()
    raise SystemExit("the server did not start")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--base-url")
    parser.add_argument("--api-key")
    parser.add_argument("--modes", default="hybrid,keyword,semantic")
    args = parser.parse_args()
    if bool(args.base_url) != bool(args.api_key):
        parser.error("--base-url and --api-key go together")
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    data = json.loads(args.file.read_text(encoding="utf-8"))
    server, workdir = None, tempfile.TemporaryDirectory(prefix="memoryhub-locomo-")
    try:
        if args.base_url:
            url, key = args.base_url.rstrip("/"), args.api_key
        else:
            server, url, key = own_server(Path(workdir.name))
        run = secrets.token_hex(4)
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
            samples = [(f"locomo-{run}-{sample['sample_id']}", sample) for sample in data]
            started = time.perf_counter()
            turns = sum(
                import_sample(http, user, sample) for user, sample in tqdm(samples, desc="import", file=sys.stderr)
            )
            if set(modes) != {"keyword"}:  # keyword search needs no vectors
                wait_embedded(http, [user for user, _ in samples])
            took = time.perf_counter() - started
            print(f"imported {turns} dialog turns of {len(samples)} conversations in {took:.1f} s (vectors included)")
            results = {mode: report(mode, *evaluate(http, samples, mode)) for mode in modes}
        final = results.get("hybrid") or results[modes[-1]]
        label = "hybrid" if "hybrid" in results else modes[-1]
        print(f"LOCOMO dialog {label} " + " ".join(f"R@{k}={final[k]:.1f}" for k in KS))
        return 0
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        workdir.cleanup()


if __name__ == "__main__":
    sys.exit(main())
