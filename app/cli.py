"""``pfscope``: one console script, one sub-command per part of the product.

Errors an operator can fix (a broken topology, a missing file) are one line on stderr and their
exit status, never a traceback; a crash is one line that says where its whole text was written
(``--debug`` or ``PFSCOPE_DEBUG=1``: on stderr). The statuses are ``ExitStatus``
(``spark_jobs/model/errors.py``); ``runtime/command.py`` is the one place that turns errors into them.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence

from pfscope.spark_jobs.compute.flags import AFTER_CRASH as COMPUTE_AFTER_CRASH
from pfscope.spark_jobs.compute.flags import add_arguments as add_job_arguments
from pfscope.spark_jobs.ingest.entry import AFTER_CRASH as INGEST_AFTER_CRASH
from pfscope.spark_jobs.ingest.entry import add_arguments as add_ingest_arguments
from pfscope.spark_jobs.model.errors import ExitStatus, OperatorError
from pfscope.spark_jobs.model.forecast.plan import FORMS
from pfscope.spark_jobs.runtime.command import add_debug_argument, run_command


class UsageError(OperatorError):
    """A problem the operator can fix; printed as one line."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pfscope", description="Exchange public folder replication, made visible."
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("simulate", help="generate a topology and an event log by the model's rules")
    s.add_argument("--scenario", required=True, help="worked-example, demo or scale")
    s.add_argument("--out", required=True, help="folder for topology.json and events.jsonl")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--stores", type=int, help="scale: number of stores")
    s.add_argument("--sites", type=int, help="scale: number of sites")
    s.add_argument("--folders", type=int, help="scale: number of folders")
    s.add_argument("--replicas", type=int, help="scale: replicas per folder")
    s.add_argument("--days", type=float, help="scale: days of traffic")
    s.add_argument("--changes-per-day", type=float, help="scale: client changes per folder per day")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")

    r = sub.add_parser("replay", help="the reference replay (plain Python): summarise the model's tables")
    r.add_argument("--topology", required=True)
    r.add_argument("--events", required=True, nargs="+")
    r.add_argument("--as-of", help="RFC 3339 time; default: the last event's")

    c = sub.add_parser("compute", help="the Spark job: compute and publish every table")
    add_job_arguments(c)

    v = sub.add_parser("serve", help="the dashboard")
    v.add_argument(
        "--data",
        help="folder of published runs, as given to compute --out "
        "(default: $PFSCOPE_SERVE_DATA, else data/demo/published)",
    )
    v.add_argument(
        "--host",
        help="address to bind (default: $PFSCOPE_HOST, else 127.0.0.1; any other needs "
        "PFSCOPE_USER and PFSCOPE_PASSWORD, and TLS: --certfile/--keyfile or "
        "--behind-tls-proxy)",
    )
    v.add_argument("--port", type=int, help="port (default: $PFSCOPE_PORT, else 8050)")
    v.add_argument(
        "--workers",
        type=int,
        help="gunicorn worker processes (default: $PFSCOPE_WORKERS, else 2 x cores + 1, at most 12)",
    )
    v.add_argument(
        "--certfile",
        metavar="FILE",
        help="serve HTTPS with this PEM certificate (with --keyfile; default: $PFSCOPE_CERTFILE)",
    )
    v.add_argument(
        "--keyfile",
        metavar="FILE",
        help="the certificate's unencrypted PEM private key (default: $PFSCOPE_KEYFILE)",
    )
    v.add_argument(
        "--behind-tls-proxy",
        action="store_true",
        default=None,
        help="plain HTTP beyond loopback is allowed: a TLS proxy fronts pfscope "
        "(default: $PFSCOPE_BEHIND_TLS_PROXY, else no)",
    )
    v.add_argument(
        "--dev",
        action="store_true",
        help="Flask's development server instead (one process, "
        "for working on the dashboard; never in production)",
    )

    o = sub.add_parser("report", help="a standalone HTML report (one file, opens offline)")
    o.add_argument("--data", required=True, help="folder of published runs (reads the one LATEST points at)")
    o.add_argument("--out", required=True, help="the HTML file to write")
    o.add_argument("--fid", help="a folder's report instead of the organisation's")
    o.add_argument(
        "--at", help="with --fid: the folder's matrix at this RFC 3339 time (default: the run's as-of)"
    )

    i = sub.add_parser("ingest", help="convert exported Exchange event logs into a pfscope event log")
    add_ingest_arguments(i)

    f = sub.add_parser(
        "refresh",
        help="the whole chain on one command: ingest the share into DIR/ingested, compute into "
        "DIR/published (serve --data DIR serves it)",
        description="Ingest then compute under one lock (DIR/.lock); one line per run. Exit status: "
        "the worse of the two steps' (0 done, 3 ingest partial, 75 a lock held, 2 an operator "
        "error, 1 a crash); a failed run leaves the last good one published.",
    )
    _add_refresh_arguments(f)

    n = sub.add_parser(
        "plan",
        help="the what-if planner: a plan of actions played on the published run, beside the baseline",
        description="Actions (times RFC 3339 or after the run's as-of: +30m, +6h, +2d): "
        + "; ".join(FORMS)
        + ". Exit status 0: safe; 4: not safe; 2: a bad action.",
    )
    n.add_argument(
        "--data", required=True, help="folder of published runs (plans on the one LATEST points at)"
    )
    n.add_argument(
        "--action", action="append", required=True, metavar="ACTION", help="one action (repeatable)"
    )
    n.add_argument("--json", action="store_true", help="one JSON object instead of text")
    n.add_argument(
        "--engine",
        choices=("auto", "spark", "python"),
        default="auto",
        help="python: play the folders in this process (one store's in a few seconds); spark: in "
        "Spark's tasks, like the job; auto (default): Spark when the plan touches more than "
        "20,000 folders or a Spark flag is given, else python. Either gives the same plan",
    )
    n.add_argument(
        "--master",
        help="Spark master URL (default: $PFSCOPE_SPARK_MASTER, spark-submit's, else local[*]); "
        "implies --engine spark",
    )
    n.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark setting (repeatable); implies --engine spark",
    )
    m = sub.add_parser("rules", help="the Prometheus alert rules shipped with pfscope (for rule_files)")
    m.add_argument("--path", action="store_true", help="print the rule file's path instead of its content")
    for command in (s, r, v, o, n, m, f):
        add_debug_argument(command)
    return p


def _add_refresh_arguments(f: argparse.ArgumentParser) -> None:
    f.add_argument(
        "--logs", required=True, nargs="+", help="the share: XML, CSV or .evtx exports (as ingest)"
    )
    f.add_argument(
        "--out", required=True, help="folder of the chain: DIR/ingested (ingest's), DIR/published (the runs)"
    )
    f.add_argument(
        "--every",
        metavar="LENGTH",
        help="keep running in the foreground, a run every LENGTH (90s, 15m, 1h, 1d) on a clock; "
        "SIGTERM or Ctrl-C stops it",
    )
    f.add_argument("--replids", help="as ingest's: CSV server,replid,store")
    f.add_argument("--topology", help="as ingest's: the topology to complete")
    f.add_argument("--timezone", help="as ingest's")
    f.add_argument("--time-offset", help="as ingest's")
    f.add_argument("--strict", action="store_true", help="as ingest's")
    f.add_argument("--keep", type=int, metavar="N", help="as compute's: published runs to keep")
    f.add_argument(
        "--engine",
        choices=("spark", "python", "auto"),
        default="auto",
        help="compute's engine (as compute's --engine); default auto: the replay in compute's own "
        "process for a log under 160 MB and no --master or --conf, else Spark",
    )
    f.add_argument("--master", help="Spark master URL for both steps (as theirs)")
    f.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark setting, both steps"
    )
    f.add_argument("--full", action="store_true", help="both steps read everything again")
    f.add_argument(
        "--wait-lock",
        type=float,
        nargs="?",
        const=-1,
        metavar="SECONDS",
        help="when another refresh holds DIR/.lock: wait for it (as long as it takes, or SECONDS) "
        "instead of exiting with status 75",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return run_command(
        args.command, lambda: _run(args), debug=_debug(args), after_crash=_AFTER_CRASH.get(args.command, "")
    )


def _run(args: argparse.Namespace) -> int:
    from pfscope.app.settings import debug_enabled

    debug_enabled(args.debug)  # a bad PFSCOPE_DEBUG is one line, as every setting is
    return _COMMANDS[args.command](args)


def _debug(args: argparse.Namespace) -> bool:
    from pfscope.app.settings import debug_enabled

    try:
        return debug_enabled(args.debug)
    except OperatorError:  # said by _run
        return False


def _compute(args: argparse.Namespace) -> int:
    from pfscope.app.settings import job_settings
    from pfscope.spark_jobs.compute.entry import publish_and_report

    return publish_and_report(job_settings(args))


def _simulate(args: argparse.Namespace) -> int:
    from pfscope.spark_jobs.simulator import simulate_to_folder

    options = {
        k: getattr(args, k)
        for k in ("stores", "sites", "folders", "replicas", "days", "changes_per_day")
        if getattr(args, k) is not None
    }
    started = time.perf_counter()
    stats = simulate_to_folder(
        args.scenario, args.out, seed=args.seed, options=options, progress=not args.no_progress
    )
    took = time.perf_counter() - started
    print(
        f"simulated {args.scenario!r} (seed {args.seed}): {stats.events:,} events in {took:.1f} s "
        f"({stats.events / max(took, 1e-9):,.0f} events/s) -> {args.out}"
    )
    return 0


def _serve(args: argparse.Namespace) -> int:
    from pfscope.app.serve import serve
    from pfscope.app.settings import access_log, load_settings, serve_workers

    settings = load_settings(
        data_dir=args.data,
        host=args.host,
        port=args.port,
        certfile=args.certfile,
        keyfile=args.keyfile,
        behind_tls_proxy=args.behind_tls_proxy,
    )
    workers = serve_workers(args.workers)
    if not settings.data_dir.is_dir():
        raise UsageError(f"{settings.data_dir}: no such folder of published runs")
    _check_bind(settings.host, settings.port)
    return serve(settings, workers=workers, dev=args.dev, access_log=access_log())


def _check_bind(host: str, port: int) -> None:
    """A taken port or an address not on this machine is one line, not a server retrying."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise UsageError(f"cannot serve on {host}: {e.strerror or e}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as e:
            raise UsageError(f"cannot serve on {host}:{port}: {e.strerror or e}") from None


def _replay(args: argparse.Namespace) -> int:
    from pfscope.spark_jobs.model.events import read_event_log
    from pfscope.spark_jobs.model.replay import replay
    from pfscope.spark_jobs.model.timeutil import format_ts, parse_ts
    from pfscope.spark_jobs.model.topology import load_topology

    try:
        topo = load_topology(args.topology)
        as_of = parse_ts(args.as_of) if args.as_of else None
        started = time.perf_counter()
        log = read_event_log(args.events, topo)
    except FileNotFoundError as e:
        raise UsageError(str(e)) from None
    result = replay(topo, log, as_of)
    took = time.perf_counter() - started
    t = result.tables
    print(
        f"as of {format_ts(result.as_of or 0)}: {log.lines_read:,} lines read, {log.accepted:,} accepted, "
        f"{log.duplicates:,} duplicates, {len(log.rejects):,} rejected ({took:.1f} s, "
        f"{log.lines_read / max(took, 1e-9):,.0f} lines/s)"
    )
    last = log.last_ts()
    if last is not None and last > result.as_of:
        from pfscope.spark_jobs.compute.entry import after_as_of_note

        print(after_as_of_note(format_ts(last), explicit=bool(args.as_of)))
    health = Counter(r["health"] for r in t["replicas"])
    print("replica health: " + ", ".join(f"{k} {v}" for k, v in sorted(health.items())))
    entries = Counter(r["state"] for r in t["backfill_entries"])
    print("backfill entries: " + (", ".join(f"{k} {v}" for k, v in sorted(entries.items())) or "none"))
    kinds = Counter(r["kind"] for r in t["backfill_requests"])
    print("backfill requests: " + (", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) or "none"))
    print(f"status requests: {len({r['msg'] for r in t['responders']})}")
    rejects = t["rejects"]
    for reason, n in Counter(r["reason"] for r in rejects).most_common():
        print(f"  rejected {n:,}: {reason}")
        # a reject an accepted line caused: where to look first (the tables name it for each)
        first = next((r for r in rejects if r["reason"] == reason and r["conflict_line"] is not None), None)
        if first is not None:
            print(
                f"    first: {first['source']}:{first['line']} conflicts with accepted "
                f"{first['conflict_source']}:{first['conflict_line']}"
            )
    return 0


def _ingest(args: argparse.Namespace) -> int:
    from pfscope.app.settings import spark_master
    from pfscope.spark_jobs.ingest.entry import ingest_and_report, settings_from_flags

    return ingest_and_report(settings_from_flags(args, master=spark_master()), args.engine)


def _refresh(args: argparse.Namespace) -> int:
    import math
    from pathlib import Path

    from pfscope.app.chain import ChainSettings, parse_every, refresh_command

    every = parse_every(args.every) if args.every is not None else None
    ingest: list[str] = []
    for flag in ("replids", "topology", "timezone", "time_offset"):
        if getattr(args, flag) is not None:
            ingest += [f"--{flag.replace('_', '-')}={getattr(args, flag)}"]
    ingest += ["--strict"] if args.strict else []
    shared = [f"--master={args.master}"] if args.master else []
    shared += [f"--conf={c}" for c in args.conf] + (["--full"] if args.full else [])
    shared += ["--debug"] if args.debug else []
    compute = [f"--keep={args.keep}"] if args.keep is not None else []
    compute += [f"--engine={args.engine}"]
    wait = None if args.wait_lock is None else (math.inf if args.wait_lock < 0 else args.wait_lock)
    settings = ChainSettings(
        tuple(args.logs), Path(args.out), tuple(ingest), tuple(compute), tuple(shared), wait
    )
    return refresh_command(settings, every)


def _runs(data: str) -> str:
    """``--data``: a folder of runs, or a ``pfscope refresh --out`` folder (its ``published``)."""
    from pathlib import Path

    from pfscope.app.settings import runs_folder

    return str(runs_folder(Path(data)))


def _report(args: argparse.Namespace) -> int:
    from pfscope.app.data import RunData, require_run
    from pfscope.app.report import build_report, write_report

    started = time.perf_counter()
    try:
        data = RunData(require_run(_runs(args.data)))
        html = build_report(data, fid=args.fid, at=args.at)
        size = write_report(html, args.out)
    except OSError as e:
        raise UsageError(f"{args.out}: cannot write the report: {e.strerror or e}") from None
    view = f"folder {args.fid}" + (f" at {args.at}" if args.at else "") if args.fid else "organisation"
    print(
        f"report of run {data.run_id} ({view}): {size:,} bytes in {time.perf_counter() - started:.1f} s "
        f"-> {args.out}"
    )
    return 0


def _plan(args: argparse.Namespace) -> int:
    import json

    from pfscope.app.settings import spark_master
    from pfscope.spark_jobs.compute.plan_engine import PlanEngine, make_plan_with
    from pfscope.spark_jobs.model.forecast.summary import plan_json, plan_lines

    how = PlanEngine(args.engine, args.master, tuple(args.conf), spark_master())
    plan, _ = make_plan_with(_runs(args.data), args.action, how)
    said = (plan.run.run_id, plan.run.as_of, plan.played, plan.result, plan.suggestions, plan.unsuggested)
    print(json.dumps(plan_json(*said), indent=1) if args.json else "\n".join(plan_lines(*said)))
    return ExitStatus.OK if plan.result.safe else ExitStatus.NOT_SAFE


def _rules(args: argparse.Namespace) -> int:
    from pfscope.app.monitoring import RULES_PATH

    print(RULES_PATH if args.path else RULES_PATH.read_text(encoding="utf-8"), end="\n" if args.path else "")
    return 0


#: what a crash of a command leaves, said after its one line
_AFTER_CRASH = {
    "compute": COMPUTE_AFTER_CRASH,
    "ingest": INGEST_AFTER_CRASH,
    "refresh": "the last good run is still published",
}
_COMMANDS = {
    "simulate": _simulate,
    "replay": _replay,
    "compute": _compute,
    "serve": _serve,
    "report": _report,
    "plan": _plan,
    "ingest": _ingest,
    "rules": _rules,
    "refresh": _refresh,
}


if __name__ == "__main__":
    sys.exit(main())
