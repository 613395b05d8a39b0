"""Bounded load against gunicorn on PostgreSQL + Redis + a real Celery worker, with invariants checked after.

    .venv/bin/python bench/load.py                        # 1, 2 and 4 web workers, 600 operations each
    .venv/bin/python bench/load.py --workers 2 --restart-postgres   # PostgreSQL stopped 3 s mid-run

Each run starts a private deployment (tests/support/stack.py: its own PostgreSQL cluster via initdb on a free
port, its own redis-server, gunicorn with N workers, `celery worker` and `celery beat`), so the machine's
shared PostgreSQL and Redis are never touched, and removes it afterwards. An asyncio httpx client on the
loopback runs a fixed number of operations (and stops scheduling at a time cap) with a fixed concurrency:

- 60 % turn: prepare + complete in one of the conversations (a scenario with memory tables and diaries);
  every fifth round's reply carries a `<tableEdit>` inserting a row that names the turn;
- 25 % document: read a JSON memory document, write it with compare-and-set, re-read and retry on 409;
- 15 % search: long-term memory keyword search in a user with seeded preferences.

It prints throughput and p50/p95/p99 latency per operation and the statuses, then waits for the outbox to
drain and checks: every document's revision equals its successful writes (no lost update); no 5xx (with
--restart-postgres: 503 storage_unavailable only inside the outage window); every committed turn's table edit
applied once, its audit recorded once and its memoryWrite done; one diary plan per committed turn, and exactly
the diary entries (round ranges) that planning every round in order gives for the rounds played, each once
(through the restart too). Exit status 1 if any invariant fails.

    .venv/bin/python bench/load.py --connections persistent pool --side-by-side   # both connection modes at once

--side-by-side starts one web server per --connections value on the same deployment and alternates the
operations between them, so both modes see the same data and the same machine load at the same moment.
--pg-log keeps PostgreSQL's server log of each run (a deadlock's report there names both statements).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import itertools
import json
import os
import random
import secrets
import shutil
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.longterm.support import EN_DETAIL, ZH_LANGUAGE  # noqa: E402  (two preferences that both stay current)
from tests.support.processes import WebServer, start_web_server  # noqa: E402
from tests.support.stack import DATABASE, Stack  # noqa: E402

CONVERSATIONS = 24
DOCUMENTS = 8
SEARCH_USERS = 6
DIARY_POLICY = {"minRounds": 3, "freeRoundsPerDiary": 2}
TEMPLATES = [
    {"name": "时空表格", "columns": ["日期", "时间", "地点", "此地角色"], "required": True},
    {"name": "重要物品表格", "columns": ["拥有人", "物品描述", "物品名", "重要原因"], "required": False},
]
SCENARIO = {
    "id": "load",
    "name": "load",
    "memoryRuntime": "axon_go",
    "memorySources": [
        {"id": "tables", "agentRef": "table-agent", "variable": "memoryTable"},
        {"id": "diary", "agentRef": "diary-orchestrator", "variable": "compassMemory"},
    ],
    "template": "{{compassMemory}}\n{{memoryTable}}\n用户：{{userMessage}}",
    "tables": TEMPLATES,
    "diary": DIARY_POLICY,
}


@dataclass
class Sample:
    op: str
    started: float
    ended: float
    statuses: list[int]
    via: str = ""  # which web server answered (--side-by-side: its DATABASE_CONNECTIONS)


VIA: contextvars.ContextVar[str] = contextvars.ContextVar("via")  # the web server of the operation running


@dataclass
class Run:
    workers: int
    restart: bool
    samples: list[Sample] = field(default_factory=list)
    writes: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    unknown: dict[int, int] = field(default_factory=lambda: defaultdict(int))  # writes answered 503: may have committed
    edit_turns: set[int] = field(default_factory=set)
    outage: tuple[float, float] | None = None
    failures: list[str] = field(default_factory=list)
    errors: list[tuple[float, str]] = field(default_factory=list)  # every 5xx answer, with its body
    wall: float = 0.0
    started: float = 0.0
    stranded: int = 0  # turns whose reply was stored but whose commit failed (complete answered 503)


def reply(turn_id: int, round_: int) -> str:
    text = f"第{round_}轮：灯塔的灯又亮了。"
    if round_ % 5:
        return text
    row = json.dumps({"0": "艾琳", "1": f"t{turn_id}", "2": "风灯"}, ensure_ascii=False)
    return f"{text}\n<tableEdit>\n<!--\ninsertRow(1, {row})\n-->\n</tableEdit>"


class Client:
    def __init__(self, run: Run, http: dict[str, httpx.AsyncClient]):
        self.run, self.http = run, http
        self.locks = [asyncio.Lock() for _ in range(CONVERSATIONS)]

    async def call(self, method: str, path: str, body: dict | None, statuses: list[int]) -> httpx.Response | None:
        try:
            response = await self.http[VIA.get()].request(method, path, json=body)
        except httpx.HTTPError as exc:
            statuses.append(0)
            self.run.failures.append(f"{method} {path}: transport error {exc!r}")
            return None
        statuses.append(response.status_code)
        if response.status_code >= 500:
            self.run.errors.append((time.monotonic(), f"{method} {path}: {response.status_code} {response.text[:300]}"))
        if response.status_code == 503:
            error = response.json().get("error", {})
            if error.get("code") != "storage_unavailable":
                self.run.failures.append(f"{method} {path}: 503 without storage_unavailable: {error}")
        return response

    # Each operation returns True when it ended on a 503: the caller runs it again after a pause.

    async def turn(self, n: int, statuses: list[int]) -> bool:
        conv = f"/v1/users/c{n}/conversations/c{n}"
        async with self.locks[n]:
            prepared = await self.call("POST", f"{conv}/turns", {"scenarioId": "load", "userMessage": "继续"}, statuses)
            if prepared is None or prepared.status_code != 201:
                return prepared is not None and prepared.status_code == 503
            turn = prepared.json()
            body = {"assistantMessage": reply(turn["turnId"], turn["round"])}
            for _ in range(100):  # a complete that met an outage is sent again with the same reply: it commits once
                done = await self.call("POST", f"{conv}/turns/{turn['turnId']}/complete", body, statuses)
                if done is None or done.status_code != 503:
                    break
                await asyncio.sleep(0.2)
            if done is not None and done.status_code == 200 and turn["round"] % 5 == 0:
                self.run.edit_turns.add(turn["turnId"])
            return done is not None and done.status_code == 503

    async def document(self, n: int, statuses: list[int]) -> bool:
        url = f"/v1/users/d{n}/conversations/c1/memory"
        read = await self.call("GET", url, None, statuses)
        for _ in range(20):
            if read is None or read.status_code != 200:
                return read is not None and read.status_code == 503
            revision = read.json()["revision"]
            written = await self.call("PUT", url, {"expectedRevision": revision, "memory": {"n": revision}}, statuses)
            if written is not None and written.status_code == 200:
                self.run.writes[n] += 1
                return False
            if written is None or written.status_code >= 500:
                self.run.unknown[n] += 1
            if written is None or written.status_code != 409:
                return written is not None and written.status_code == 503
            read = await self.call("GET", url, None, statuses)  # re-read and decide again
        return False

    async def search(self, n: int, statuses: list[int]) -> bool:
        body = {"query": "中文回答", "mode": "keyword"}
        found = await self.call("POST", f"/v1/users/s{n}/memories/search", body, statuses)
        return found is not None and found.status_code == 503


async def drive(
    stack: Stack, urls: dict[str, str], key: str, run: Run, requests: int, concurrency: int, cap: float, seed: int
) -> None:
    """Run the plan; with several `urls` (one deployment, web servers differing in one setting) the operations
    alternate between them, so that both see the same data and the same machine load at the same time."""
    rng = random.Random(seed)
    plan = rng.choices(["turn", "document", "search"], weights=[60, 25, 15], k=requests)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"Authorization": f"Bearer {key}"}
    async with contextlib.AsyncExitStack() as exits:
        http = {
            name: await exits.enter_async_context(
                httpx.AsyncClient(base_url=url, headers=headers, timeout=60, limits=limits)
            )
            for name, url in urls.items()
        }
        client = Client(run, http)
        queue: asyncio.Queue = asyncio.Queue()
        names = list(urls)
        for index, op in enumerate(plan):
            n = rng.randrange(CONVERSATIONS if op == "turn" else DOCUMENTS)
            queue.put_nowait((names[index % len(names)], op, n))
        started = run.started = time.monotonic()

        async def worker() -> None:
            while not queue.empty() and time.monotonic() - started < cap:
                via, op, n = queue.get_nowait()
                VIA.set(via)
                statuses: list[int] = []
                t0 = time.monotonic()
                for _ in range(100):  # a 503 is retried after a pause, as a client would: the op must succeed
                    if op == "search":
                        again = await client.search(n % SEARCH_USERS, statuses)
                    else:
                        again = await getattr(client, op)(n, statuses)
                    if not again:
                        break
                    await asyncio.sleep(0.2)
                else:
                    run.failures.append(f"{op}: still 503 after 100 attempts")
                run.samples.append(Sample(op, t0, time.monotonic(), statuses, via))

        async def outage() -> None:
            await asyncio.sleep(cap / 6 if cap < 60 else 8)
            down = time.monotonic()
            await asyncio.to_thread(stack.postgres.stop)
            await asyncio.sleep(3)
            await asyncio.to_thread(stack.postgres.start)
            run.outage = (down, time.monotonic())

        tasks = [asyncio.create_task(worker()) for _ in range(concurrency)]
        if run.restart:
            tasks.append(asyncio.create_task(outage()))
        await asyncio.gather(*tasks)
        run.wall = time.monotonic() - started


def setup(stack: Stack, key: str) -> None:
    http = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    assert http.post("/v1/scenarios", json=SCENARIO).status_code == 201
    for n in range(SEARCH_USERS):
        for body in (ZH_LANGUAGE, EN_DETAIL):
            response = http.post(f"/v1/users/s{n}/memories", json=body)
            assert response.status_code == 201, response.text


def sql(stack: Stack, query: str) -> list[list[str]]:
    out = stack.postgres.psql(query, DATABASE)
    return [line.split("|") for line in out.splitlines() if line]


def settle(stack: Stack, timeout: float = 180) -> int:
    """Wait until every outbox row is acknowledged (the worker and the relay have done all the work)."""
    deadline = time.monotonic() + timeout
    while True:
        pending = int(sql(stack, "SELECT count(*) FROM memoryhub_outbox_message WHERE done_at IS NULL")[0][0])
        if pending == 0 or time.monotonic() > deadline:
            return pending
        time.sleep(1)


def expected_entries(rounds: list[int]) -> list[tuple[int, int]]:
    """The diary entries (round ranges) the policy writes when the committed `rounds` are planned in order.

    Usually every round 1…n. A turn whose reply was stored but whose commit met the outage (its `complete`
    answered 503; the client then played the next round as a new turn) keeps its round number and is never
    committed, so no plan is made at that round and the next committed round's entry covers it.
    """
    from diaries.planning import DiaryState, parse_diary_policy, plan_diary

    policy, last, quota, entries = parse_diary_policy(DIARY_POLICY), 0, 0, []
    for round_ in sorted(rounds):
        plan = plan_diary(DiaryState(rounds=round_, last_diary_round=last, quota_used=quota), policy)
        if plan.writes_summary:
            entries.append((plan.round_from, plan.round_to))
            last = plan.round_to
            quota += plan.decision == "summary_and_diary"
    return entries


def check(stack: Stack, key: str, run: Run) -> None:
    fail = run.failures.append
    statuses = [(s, status) for s in run.samples for status in s.statuses]
    for sample, status in statuses:
        if status >= 500 and not (status == 503 and run.outage and in_outage(sample, run.outage)):
            fail(f"{sample.op}: {status} outside any outage window")
    pending = settle(stack)
    if pending:
        fail(f"{pending} outbox rows still pending after the wait")
    http = httpx.Client(base_url=stack.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    for n in range(DOCUMENTS):
        revision = http.get(f"/v1/users/d{n}/conversations/c1/memory").json()["revision"]
        if not run.writes[n] <= revision <= run.writes[n] + run.unknown[n]:
            fail(f"document d{n}: revision {revision} but {run.writes[n]} successful writes (lost or phantom update)")
    committed = sql(stack, "SELECT id, conversation_id, round FROM memories_turn WHERE status = 'committed'")
    run.stranded = int(sql(stack, "SELECT count(*) FROM memories_turn WHERE status = 'completed'")[0][0])
    turn_ids = {int(row[0]) for row in committed}
    duplicates = sql(
        stack,
        "SELECT turn_id, type, count(*) FROM memories_event WHERE type IN ('table.updated', 'turn.background_done') "
        "GROUP BY turn_id, type HAVING count(*) > 1",
    )
    if duplicates:
        fail(f"background effects recorded twice: {duplicates[:5]}")
    unfinished = sql(
        stack,
        "SELECT id, memory_write->>'status' FROM memories_turn WHERE status = 'committed' "
        "AND coalesce(memory_write->>'status', '') <> 'done'",
    )
    if unfinished:  # every scheduled job ran to its end: none failed on a blip, none still pending
        fail(f"{len(unfinished)} committed turns whose memoryWrite is not done: {unfinished[:5]}")
    audited = {int(r[0]) for r in sql(stack, "SELECT turn_id FROM memories_event WHERE type = 'turn.background_done'")}
    if audited != turn_ids:
        fail(f"audit events for {len(audited)} turns, {len(turn_ids)} committed")
    edit_turns = {int(t) for t, _, round_ in committed if int(round_) % 5 == 0}
    if not run.edit_turns <= edit_turns:
        fail("a turn answered 200 with an edit is not committed")
    for n in range(CONVERSATIONS):
        tables = http.get(f"/v1/users/c{n}/conversations/c{n}/tables").json()["tables"]
        cells = [row[1] for table in tables if table["name"] == "重要物品表格" for row in table["rows"]]
        for turn_id in edit_turns:
            if cells.count(f"t{turn_id}") > 1:
                fail(f"turn {turn_id}: its table edit applied {cells.count(f't{turn_id}')} times")
        mine = {int(t) for t, conv, _ in committed if conv == f"c{n}"} & edit_turns
        missing = [t for t in mine if f"t{t}" not in cells]
        if missing:
            fail(f"conversation c{n}: table edits of turns {missing} not applied")
    plans = sql(stack, "SELECT turn_id, count(*) FROM diaries_diaryplanrecord WHERE trigger = 'task' GROUP BY turn_id")
    if {int(t) for t, _ in plans} != turn_ids or any(int(c) != 1 for _, c in plans):
        fail("diary planning did not run exactly once per committed turn")
    rounds: dict[str, list[int]] = defaultdict(list)
    for _, conv, round_ in committed:
        rounds[conv].append(int(round_))
    entries = defaultdict(list)
    for conv, lo, hi in sql(stack, "SELECT conversation_id, round_from, round_to FROM diaries_diaryentry"):
        entries[conv].append((int(lo), int(hi)))
    for conv, played in rounds.items():
        # Exactly the entries of planning every round in order, each once — also through an outage, after which
        # the held-back tasks of consecutive rounds run in any order (a task plans unplanned earlier rounds
        # first: diaries/services.py).
        spans = sorted(entries[conv])
        if spans != expected_entries(played):
            gaps = sorted(set(range(1, max(played) + 1)) - set(played))
            fail(f"{conv}: diary entries {spans}, the policy gives {expected_entries(played)} (uncommitted: {gaps})")


def one_at_a_time(urls: dict[str, str], key: str, iterations: int) -> dict[str, dict[str, float]]:
    """Per-request latency without queueing: read requests one at a time, alternating between the web servers
    (which goes first alternates too), so that each request of one mode has a neighbour of the other."""
    headers = {"Authorization": f"Bearer {key}"}
    clients = {name: httpx.Client(base_url=url, headers=headers, timeout=60) for name, url in urls.items()}
    timings: dict[str, dict[str, list[float]]] = {name: {"document": [], "search": []} for name in urls}
    names = list(urls)
    for i in range(iterations):
        for name in names if i % 2 else names[::-1]:
            requests = (
                ("document", "GET", f"/v1/users/d{i % DOCUMENTS}/conversations/c1/memory", None),
                (
                    "search",
                    "POST",
                    f"/v1/users/s{i % SEARCH_USERS}/memories/search",
                    {"query": "中文回答", "mode": "keyword"},
                ),
            )
            for op, method, path, body in requests:
                t0 = time.perf_counter()
                response = clients[name].request(method, path, json=body)
                elapsed = (time.perf_counter() - t0) * 1000
                if response.status_code == 200 and i >= iterations // 10:  # the first tenth warms up
                    timings[name][op].append(elapsed)
    return {
        name: {op: statistics.median(values) for op, values in ops.items() if values} for name, ops in timings.items()
    }


def in_outage(sample: Sample, outage: tuple[float, float], grace: float = 2.0) -> bool:
    return sample.ended >= outage[0] and sample.started <= outage[1] + grace


def percentile(values: list[float], q: float) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def report(run: Run) -> list[dict]:
    rows = []
    vias = sorted({s.via for s in run.samples})
    for op, via in itertools.product(("turn", "document", "search"), vias):
        samples = [s for s in run.samples if s.op == op and s.via == via]
        latencies = [(s.ended - s.started) * 1000 for s in samples]
        codes: dict[int, int] = defaultdict(int)
        for s in samples:
            for status in s.statuses:
                codes[status] += 1
        rows.append(
            {
                "op": op if len(vias) == 1 else f"{op} ({via})",
                "via": via,
                "count": len(samples),
                "per_s": len(samples) / run.wall if run.wall else 0.0,
                "p50": percentile(latencies, 50),
                "p95": percentile(latencies, 95),
                "p99": percentile(latencies, 99),
                "errors": sum(c for code, c in codes.items() if code >= 500 or code == 0),
                "statuses": dict(sorted(codes.items())),
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--requests", type=int, default=600, help="operations per run")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--time-cap", type=float, default=120.0, help="seconds; no new operation after it")
    parser.add_argument("--restart-postgres", action="store_true", help="stop PostgreSQL for 3 s mid-run")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--pg-log", type=Path, help="keep each run's PostgreSQL server log (PG_LOG.<w>.<c>.<n>)")
    parser.add_argument(
        "--connections",
        nargs="+",
        choices=["persistent", "pool"],
        default=["persistent"],
        help="DATABASE_CONNECTIONS of the deployment: persistent connections or psycopg's pool (each in turn)",
    )
    parser.add_argument("--repeat", type=int, default=1, help="run every configuration this many times")
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="one deployment with a web server per --connections value, operations alternating between them",
    )
    parser.add_argument(
        "--one-at-a-time",
        type=int,
        default=300,
        help="with --side-by-side, then this many rounds of single read requests alternating between the servers",
    )
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))  # settings refuse to start without one
    results, ok = [], True
    modes = [args.connections] if args.side_by_side else [[c] for c in args.connections]
    runs = [(w, m) for _ in range(args.repeat) for w in args.workers for m in modes]
    for workers, modes_of_run in runs:
        connections, others = modes_of_run[0], modes_of_run[1:]
        extra: list[WebServer] = []
        sequential: dict[str, dict[str, float]] = {}
        stack = Stack(
            web_workers=workers,
            celery=True,
            env={
                "OUTBOX_RELAY_INTERVAL_SECONDS": "2",
                "OUTBOX_REDISPATCH_AFTER_SECONDS": "5",
                "OUTBOX_BACKOFF_MAX_SECONDS": "10",
                "GUNICORN_MAX_REQUESTS": "0",
                "DATABASE_CONNECTIONS": connections,
            },
        ).start()
        try:
            urls = {connections: stack.url}
            for mode in others:  # the same deployment, another web server: only DATABASE_CONNECTIONS differs
                extra.append(start_web_server({**stack.env, "DATABASE_CONNECTIONS": mode}, workers=workers))
                urls[mode] = extra[-1].url
            key = stack.product_key("load")
            setup(stack, key)
            run = Run(workers=workers, restart=args.restart_postgres)
            asyncio.run(drive(stack, urls, key, run, args.requests, args.concurrency, args.time_cap, args.seed))
            check(stack, key, run)
            if len(urls) > 1 and args.one_at_a_time:
                sequential = one_at_a_time(urls, key, args.one_at_a_time)
        finally:
            for server in extra:
                server.stop()
            if args.pg_log:  # the server's own account of errors (a deadlock names both statements)
                shutil.copyfile(stack.postgres.log, f"{args.pg_log}.{workers}.{'+'.join(modes_of_run)}.{len(results)}")
            stack.stop()
        rows = report(run)
        label = " | ".join(f"{mode} connections" for mode in modes_of_run)
        title = f"gunicorn {workers} worker(s), {label}, {len(run.samples)} operations"
        title += f" in {run.wall:.1f} s (load average {os.getloadavg()[0]:.1f})"
        if run.outage:
            down, up = (t - run.started for t in run.outage)
            title += f", PostgreSQL down from +{down:.1f} s to +{up:.1f} s"
        print(f"\n{title}")
        print(f"{'operation':<22}{'count':>7}{'ops/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'5xx':>6}  statuses")
        for r in rows:
            print(
                f"{r['op']:<22}{r['count']:>7}{r['per_s']:>8.1f}{r['p50']:>9.0f}{r['p95']:>9.0f}{r['p99']:>9.0f}"
                f"{r['errors']:>6}  {r['statuses']}"
            )
        for at, error in run.errors[:10]:
            print(f"  5xx at +{at - run.started:.1f} s: {error}")
        for mode, medians in sequential.items():
            figures = ", ".join(f"{op} {ms:.2f} ms" for op, ms in medians.items())
            print(f"one at a time ({args.one_at_a_time} alternating rounds), median: {mode}: {figures}")
        if run.stranded:
            print(f"turns completed but not committed (their commit met the outage): {run.stranded}")
        print("invariants:", "OK" if not run.failures else "FAILED")
        for failure in run.failures[:20]:
            print("  -", failure)
        ok = ok and not run.failures
        results.append(
            {
                "workers": workers,
                "connections": modes_of_run,
                "load_average": os.getloadavg(),
                "wall": run.wall,
                "rows": rows,
                "failures": run.failures,
                "outage": (run.outage[1] - run.outage[0]) if run.outage else None,
                "one_at_a_time": sequential,
                "stranded": run.stranded,
            }
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
