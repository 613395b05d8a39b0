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
The last line printed is `LOCOMO dialog hybrid R@5=… R@10=… R@25=… R@50=…` (when dialog units are measured).

`--units dialog,observation,summary` adds the paper's other two units, through the long-term memories API:
- observation: each conversation's observations become memories of a product-defined searchable kind
  (`locomo_observation`, its text embedded, `evidencePolicy: "quote"`), each with its turn as evidence (the
  first turn's text, quoted from the text of all its turns as the source), asked with POST …/memories/search
  (limit 50); an evidence dia_id counts when an observation drawn from that turn is in the top k;
- summary: each session summary becomes a memory of the kind `locomo_summary`; an evidence dia_id counts
  when its session's summary is in the top k (R@2/5/10, as Table 3).
Each unit goes to its own user, so a search sees only that unit. Long-term search has a relevance floor
(`minScore`, docs/recall.md); these rankings are measured without it (`minScore: -1`), as recall@k of a ranking.
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
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from tqdm import tqdm

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_FILE = ROOT.parent / "shared" / "data" / "locomo" / "locomo10-dev.json"
KS = (5, 10, 25, 50)
CATEGORIES = {4: "single-hop", 1: "multi-hop", 2: "temporal", 3: "open-domain", 5: "adversarial"}
PAPER_DRAGON = {5: 56.7, 10: 66.2, 25: 76.7, 50: 82.7}  # Table 3, dialog turns, all ten conversations
PAPER_OBSERVATIONS = {5: 56.2, 10: 61.3, 25: 67.5, 50: 71.2}  # Table 3, observations
PAPER_SUMMARIES = {2: 65.9, 5: 72.1, 10: 84.7}  # Table 3, session summaries
SUMMARY_KS = (2, 5, 10)
UNIT_KINDS = {
    "observation": "locomo_observation",
    "summary": "locomo_summary",
}
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


def define_unit_kinds(http: httpx.Client) -> None:
    schema = {
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1},
            "ids": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["text", "ids"],
        "additionalProperties": False,
    }
    for name in UNIT_KINDS.values():
        # A fact drawn from a conversation (a past event, a third person): the quote rule, not the preference
        # statement rules (docs/long-term-memories.md, evidencePolicy).
        body = {
            "name": name,
            "contentSchema": schema,
            "searchable": True,
            "textField": "text",
            "evidencePolicy": "quote",
        }
        response = http.post("/v1/memory-kinds", json=body)
        if response.status_code not in (201, 409):
            raise SystemExit(f"memory kind refused: {response.status_code} {response.text[:300]}")


def unit_memories(sample: dict, unit: str) -> list[dict]:
    """The memories a conversation's observations or session summaries become: {text, ids} with evidence."""
    conversation = sample["conversation"]
    turns = {turn["dia_id"]: turn_text(turn) for _, _, session in sessions(conversation) for turn in session}
    out = []
    if unit == "observation":
        for by_speaker in sample["observation"].values():
            for facts in by_speaker.values():
                for text, ids in facts:
                    ids = [ids] if isinstance(ids, str) else list(ids)
                    quoted = [turns[i] for i in ids if i in turns]
                    if quoted:
                        out.append({"text": text, "ids": ids, "evidence": quoted[0], "source": "\n".join(quoted)})
    else:
        for key, text in sample["session_summary"].items():
            session = key.removeprefix("session_").removesuffix("_summary")
            ids = [i for i in turns if i.split(":")[0] == f"D{session}"]
            out.append({"text": text, "ids": ids, "evidence": text, "source": text})
    return out


def import_units(http: httpx.Client, user: str, sample: dict, unit: str) -> tuple[int, int]:
    """(stored, refused) memories of this unit for the user."""
    stored = refused = 0
    for memory in unit_memories(sample, unit):
        body = {
            "kind": UNIT_KINDS[unit],
            "content": {"text": memory["text"], "ids": memory["ids"]},
            "evidence": memory["evidence"],
            "source": memory["source"],
            "consent": True,
        }
        response = http.post(f"/v1/users/{user}/memories", json=body)
        if response.status_code == 201:
            stored += 1
        elif 400 <= response.status_code < 500:
            refused += 1
            if os.environ.get("LOCOMO_SHOW_REFUSALS"):
                print(f"refused {unit}: {response.text[:300]}", file=sys.stderr)
        else:
            raise SystemExit(f"memory write failed: {response.status_code} {response.text[:300]}")
    return stored, refused


def evaluate_units(http: httpx.Client, samples: list[tuple[str, dict]], unit: str, mode: str) -> tuple[dict, list]:
    """Recall of evidence dia_ids by the units ranked: a unit covers the turns in its content's `ids`."""
    body = {"mode": mode, "limit": 50, **({} if mode == "keyword" else {"minScore": -1})}

    def ask(user: str, question: str) -> list[list[str]]:
        response = http.post(f"/v1/users/{user}/memories/search", json={"query": question, **body})
        response.raise_for_status()
        return [hit["content"]["ids"] for hit in response.json()["results"]]

    return evaluate(samples, f"{unit} {mode:>8}", SUMMARY_KS if unit == "summary" else KS, ask)


def wait_embedded(http: httpx.Client, users: list[str], timeout: float = 3600) -> None:
    deadline = time.monotonic() + timeout
    for user in users:
        while (status := http.get(f"/v1/users/{user}/history").raise_for_status().json())["pending"]:
            if time.monotonic() > deadline:
                raise SystemExit(f"vectors still pending for {user}: {status}")
            time.sleep(0.5)


def recall(evidence: list[str], covered: list[list[str]], k: int) -> float:
    """Evidence dia_ids covered by the top k units ÷ evidence ids (1 for a question without evidence)."""
    if not evidence:
        return 1.0
    top = {dia_id for ids in covered[:k] for dia_id in ids}
    return sum(1 for item in evidence if item in top) / len(evidence)


def dialog_ask(http: httpx.Client, mode: str) -> Callable[[str, str], list[list[str]]]:
    def ask(user: str, question: str) -> list[list[str]]:
        response = http.post(f"/v1/users/{user}/history/search", json={"query": question, "mode": mode, "limit": 50})
        response.raise_for_status()
        return [[hit["clientId"]] for hit in response.json()["results"]]

    return ask


def evaluate(
    samples: list[tuple[str, dict]], label: str, ks: tuple[int, ...], ask: Callable[[str, str], list[list[str]]]
) -> tuple[dict, list[float]]:
    """Every question asked as written; recall per category and overall at each k, and the latencies."""
    scores: dict[object, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    latencies = []
    questions = [(user, qa) for user, sample in samples for qa in sample["qa"]]
    for user, qa in tqdm(questions, desc=label, unit="q", file=sys.stderr):
        started = time.perf_counter()
        covered = ask(user, qa["question"])
        latencies.append((time.perf_counter() - started) * 1000)
        for k in ks:
            value = recall(qa.get("evidence") or [], covered, k)
            scores[qa.get("category")][k].append(value)
            scores["overall"][k].append(value)
    return scores, latencies


def line(label: str, values: dict[int, float], count: int | str = "") -> str:
    return (
        f"  {label:<22} "
        + "  ".join(f"R@{k}={value:5.1f}" for k, value in values.items())
        + (f"  (n={count})" if count != "" else "")
    )


def report(mode: str, scores: dict, latencies: list[float], unit: str = "dialog") -> dict[int, float]:
    ks, paper = {"dialog": (KS, PAPER_DRAGON), "observation": (KS, PAPER_OBSERVATIONS)}.get(
        unit, (SUMMARY_KS, PAPER_SUMMARIES)
    )
    print(f"\nLoCoMo {unit} units, mode {mode}")
    for category, label in CATEGORIES.items():
        if category in scores:
            means = {k: 100 * statistics.fmean(scores[category][k]) for k in ks}
            print(line(f"{category} {label}", means, len(scores[category][ks[0]])))
    overall = {k: 100 * statistics.fmean(scores["overall"][k]) for k in ks}
    print(line("overall", overall, len(scores["overall"][ks[0]])))
    print(line("paper DRAGON (Table 3)", paper))
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


def dialog_units(http: httpx.Client, samples: list[tuple[str, dict]], modes: list[str]) -> dict:
    started = time.perf_counter()
    turns = sum(import_sample(http, user, sample) for user, sample in tqdm(samples, desc="import", file=sys.stderr))
    if set(modes) != {"keyword"}:  # keyword search needs no vectors
        wait_embedded(http, [user for user, _ in samples])
    took = time.perf_counter() - started
    print(f"imported {turns} dialog turns of {len(samples)} conversations in {took:.1f} s (vectors included)")
    return {mode: report(mode, *evaluate(samples, f"{mode:>8}", KS, dialog_ask(http, mode))) for mode in modes}


def other_units(http: httpx.Client, samples: list[tuple[str, dict]], units: list[str], modes: list[str]) -> None:
    if units:
        define_unit_kinds(http)
    for unit in units:
        unit_samples = [(f"{user}-{unit}", sample) for user, sample in samples]
        started = time.perf_counter()
        counts = [import_units(http, user, sample, unit) for user, sample in tqdm(unit_samples, desc=unit)]
        stored, refused = sum(c[0] for c in counts), sum(c[1] for c in counts)
        took = time.perf_counter() - started
        print(f"\nstored {stored} {unit} memories ({refused} refused by admission) in {took:.1f} s")
        for mode in modes:
            report(mode, *evaluate_units(http, unit_samples, unit, mode), unit=unit)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--file", type=Path, default=DEFAULT_FILE)
    parser.add_argument("--base-url")
    parser.add_argument("--api-key")
    parser.add_argument("--modes", default="hybrid,keyword,semantic")
    parser.add_argument("--units", default="dialog", help="dialog,observation,summary: the units retrieved")
    args = parser.parse_args()
    if bool(args.base_url) != bool(args.api_key):
        parser.error("--base-url and --api-key go together")
    modes = [mode.strip() for mode in args.modes.split(",") if mode.strip()]
    units = [unit.strip() for unit in args.units.split(",") if unit.strip()]
    if not units or not set(units) <= {"dialog", *UNIT_KINDS}:
        parser.error("--units: one or more of dialog, observation, summary")
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
            results = dialog_units(http, samples, modes) if "dialog" in units else {}
            other_units(http, samples, [unit for unit in units if unit != "dialog"], modes)
        if results:
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
