"""``pfscope serve`` under load: N concurrent users replaying the pages' Dash callbacks. Prints.

    python tests/benchmarks/bench_serve.py --data DIR [--users 20] [--folders 30] [--stores 5]
                                           [--rounds 3] [--workers N]

``DIR`` is a ``compute --out`` folder (the demo's, or a 100,000-folder ``scale`` run: see
``bench_dashboard.py``). Steps:

1. Capture: Chromium opens the overview, ``--stores`` store pages and ``--folders`` folder pages
   (the busiest by backfill entries; on each folder page the time slider moves to its start and
   back to its end) against a capture server, recording every ``POST /_dash-update-component``
   body exactly as the pages send it. One *visit* = the callbacks one page view sends.
2. Cold, one user: a fresh ``pfscope serve`` (empty cache) and one user opening each visit
   once, in turn: the time of each first visit (its callbacks back to back), per page kind.
3. Cold, N users: another fresh server; ``--users`` threads replay every visit, each user in
   its own order, all at once. A callback is *cold* the first time any user sends it.
4. Warm, N users: on the same server, ``--rounds`` more passes of every user.

Per callback: server time seen by the client (request sent to response read, over a fresh
connection, as a browser without keep-alive pays it), p50 / p95 / max, and errors (any status
but 200 and 204, or no answer). Printed with the machine's load average and the CPU seconds of
the server's processes (arbiter and workers) and of this client.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.bench_dashboard import CHROMIUM_ARGS, free_port, pct, pick_folders  # noqa: E402

pytestmark = pytest.mark.benchmark


@dataclass
class Visit:
    kind: str  # overview, store, folder
    path: str
    bodies: list[bytes] = field(default_factory=list)


@dataclass
class Sample:
    phase: str
    kind: str
    ms: float
    ok: bool
    cold: bool


class Server:
    def __init__(self, data: Path, workers: int | None, cache: Path) -> None:
        self.port = free_port()
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PFSCOPE_CACHE_DIR": str(cache)}
        cmd = [
            sys.executable,
            "-m",
            "pfscope.app.cli",
            "serve",
            "--data",
            str(data),
            "--port",
            str(self.port),
        ]
        if workers:
            cmd += ["--workers", str(workers)]
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.proc.stdout is not None
        self.line = self.proc.stdout.readline().strip()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                if self.request("GET", "/_dash-layout")[0] == 200:
                    self._settle()
                    return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise SystemExit(f"pfscope serve did not answer: {self.line}")

    def _settle(self) -> None:
        """Wait until every worker has booted: the server's CPU time stops growing."""
        last = self.cpu_seconds()
        for _ in range(120):
            time.sleep(1)
            now = self.cpu_seconds()
            if now - last < 0.1:
                return
            last = now

    def request(
        self, method: str, path: str, body: bytes | None = None, timeout: float = 300
    ) -> tuple[int, float]:
        started = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            headers = {"Content-Type": "application/json"} if body is not None else {}
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            r.read()
            return r.status, (time.perf_counter() - started) * 1000
        finally:
            conn.close()

    def cpu_seconds(self) -> float:
        p = psutil.Process(self.proc.pid)
        total = 0.0
        for q in [p, *p.children(recursive=True)]:
            try:
                t = q.cpu_times()
                total += t.user + t.system
            except psutil.NoSuchProcess:
                pass
        return total

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def capture(data: Path, folders: list[str], stores: list[str]) -> list[Visit]:
    """The callbacks each page view sends, recorded from Chromium."""
    from playwright.sync_api import sync_playwright

    visits = [Visit("overview", "/")] + [Visit("store", f"/store/{s}") for s in stores]
    visits += [Visit("folder", f"/folder/{f}") for f in folders]
    with tempfile.TemporaryDirectory() as cache:
        server = Server(data, 2, Path(cache))
        base = f"http://127.0.0.1:{server.port}"
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                current: list[Visit] = []

                def sent(req) -> None:  # type: ignore[no-untyped-def]
                    if "_dash-update-component" in req.url and current and req.post_data_buffer:
                        current[0].bodies.append(req.post_data_buffer)

                page.on("request", sent)
                for v in visits:
                    current[:] = [v]
                    page.goto(base + v.path)
                    page.wait_for_selector("main h1", timeout=300_000)
                    page.wait_for_load_state("networkidle")
                    thumb = page.locator("#folder-slider [role=slider]")
                    if v.kind == "folder" and thumb.count():
                        thumb.focus()
                        for key in ("Home", "End"):
                            before = page.locator("#folder-at").inner_text()
                            thumb.press(key)  # the page replays when the keys pause: wait for each step
                            page.wait_for_function(
                                "t => document.querySelector('#folder-at').innerText !== t",
                                arg=before,
                                timeout=120_000,
                            )
                            page.wait_for_load_state("networkidle")
                    current.clear()
                browser.close()
        finally:
            server.stop()
    return [v for v in visits if v.bodies]


def replay(
    server: Server,
    visits: list[Visit],
    users: int,
    rounds: int,
    phase: str,
    seen: set[bytes],
    samples: list[Sample],
) -> float:
    """``users`` threads, each replaying every visit ``rounds`` times in its own order; wall seconds."""
    lock = threading.Lock()
    start = threading.Barrier(users)

    def user(n: int) -> None:
        order = list(range(len(visits)))
        random.Random(n).shuffle(order)
        start.wait()
        for _ in range(rounds):
            for i in order:
                v = visits[i]
                for body in v.bodies:
                    with lock:
                        cold = body not in seen
                        seen.add(body)
                    try:
                        status, ms = server.request("POST", "/_dash-update-component", body)
                        ok = status in (200, 204)
                    except OSError:
                        status, ms, ok = 0, float("nan"), False
                    with lock:
                        samples.append(Sample(phase, v.kind, ms, ok, cold))

    threads = [threading.Thread(target=user, args=(n,)) for n in range(users)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started


def row(label: str, ms: list[float], errors: int) -> str:
    if not ms:
        return f"{label:34} {0:6} {'-':>8} {'-':>8} {'-':>8} {errors:7}"
    return f"{label:34} {len(ms):6} {pct(ms, 0.5):8.0f} {pct(ms, 0.95):8.0f} {max(ms):8.0f} {errors:7}"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--folders", type=int, default=30)
    ap.add_argument("--stores", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, help="pfscope serve --workers (default: serve's own)")
    args = ap.parse_args()

    run = args.data / json.loads((args.data / "LATEST").read_text())["path"]
    folders = pick_folders(args.data, args.folders)
    stores = [str(s) for s in pd.read_parquet(run / "stores", columns=["store"])["store"].head(args.stores)]
    client = psutil.Process()
    print(
        f"machine: {os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB; "
        f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print(f"data: {args.data} ({len(pd.read_parquet(run / 'folders', columns=['fid'])):,} folders)")
    t = time.perf_counter()
    visits = capture(args.data, folders, stores)
    print(
        f"captured {sum(len(v.bodies) for v in visits)} callbacks of {len(visits)} page views from Chromium "
        f"in {time.perf_counter() - t:.0f} s"
    )

    samples: list[Sample] = []
    with tempfile.TemporaryDirectory() as cache:
        server = Server(args.data, args.workers, Path(cache))
        print(server.line)
        cpu0 = server.cpu_seconds()
        seen: set[bytes] = set()
        first: dict[str, list[float]] = defaultdict(list)
        for v in visits:  # one user, cold: each page view's callbacks back to back
            took = 0.0
            for body in v.bodies:
                seen.add(body)
                status, ms = server.request("POST", "/_dash-update-component", body)
                samples.append(Sample("cold, 1 user", v.kind, ms, status in (200, 204), True))
                took += ms
            first[v.kind].append(took)
        cpu_single = server.cpu_seconds() - cpu0
        server.stop()
    with tempfile.TemporaryDirectory() as cache:
        server = Server(args.data, args.workers, Path(cache))
        cpu0, c0 = server.cpu_seconds(), sum(client.cpu_times()[:2])
        seen = set()
        wall_cold = replay(server, visits, args.users, 1, f"{args.users} users", seen, samples)
        wall_warm = replay(server, visits, args.users, args.rounds, f"{args.users} users", seen, samples)
        cpu_load = server.cpu_seconds() - cpu0
        cpu_client = sum(client.cpu_times()[:2]) - c0
        server.stop()

    print(
        f"\nfirst visit of a page, cold cache, one user (ms, its callbacks back to back; "
        f"server CPU {cpu_single:.1f} s):"
    )
    print(f"{'page':34} {'n':>6} {'p50':>8} {'p95':>8} {'max':>8}")
    for kind, ms in first.items():
        print(row(kind, ms, 0)[:-8])
    n_load = sum(1 for s in samples if s.phase != "cold, 1 user")
    print(
        f"\nper callback (ms), {args.users} concurrent users: cold pass {wall_cold:.0f} s, "
        f"{args.rounds} warm passes {wall_warm:.0f} s; {n_load:,} callbacks, "
        f"{n_load / (wall_cold + wall_warm):.1f}/s; server CPU {cpu_load:.1f} s "
        f"({cpu_load / max(n_load, 1) * 1000:.1f} ms per callback), client CPU {cpu_client:.1f} s"
    )
    print(f"{'phase / page':34} {'n':>6} {'p50':>8} {'p95':>8} {'max':>8} {'errors':>7}")
    for phase, cold in (
        ("cold, 1 user", True),
        (f"{args.users} users", True),
        (f"{args.users} users", False),
    ):
        group = [s for s in samples if s.phase == phase and s.cold == cold]
        label = phase if phase.startswith("cold") else f"{phase}, {'cold' if cold else 'warm'}"
        for kind in ("overview", "store", "folder"):
            part = [s for s in group if s.kind == kind]
            print(row(f"{label}: {kind}", [s.ms for s in part if s.ok], sum(not s.ok for s in part)))
        print(row(f"{label}: all", [s.ms for s in group if s.ok], sum(not s.ok for s in group)))
    print(f"\nload average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
