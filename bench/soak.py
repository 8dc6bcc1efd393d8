"""The live stack held: `chaintape up` (the README's first command, at its 1M-swap default) run
for an hour while every process's memory is read every few seconds. After a warm-up, each
role's resident memory must stay flat: its growth is the least-squares slope over the rest of
the run, in MB an hour. The whole stack's figure is the sum of the processes' proportional set
sizes (shared pages counted once), and their resident sizes beside it. Progress goes to
standard error every minute; one JSON line at the end.

    .venv/bin/python bench/soak.py --minutes 60 [--home var/bench-soak] [--swaps 1000000]
    .venv/bin/python bench/soak.py --up-args "--rpc URL --venues FILE --hermes URL" --home H

A home holding a lake is resumed (the live market catches up with the clock first); --fresh
simulates it again. `renewals` counts the writers renewed in place (docs/live.md); set
CHAINTAPE_RENEW_ABOVE_MB to see them within the hour.

With --kill-each, after the hour each component is killed in turn (SIGKILL): `failures` says,
for each, how long until `up` said it restarted, how many of the edge's status reads meanwhile
were answered (the edge's own restart aside, the others must not notice), and how long until
a snapshot and a live tail newer than those served at the kill were served.
"""

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "chaintape"
sys.path.insert(0, str(REPO))

from bench.processes import session_processes  # noqa: E402
from tests.conftest import free_port  # noqa: E402

MB = 1 << 20
# The runs' own processes are named by the daemon's: each refresh is a process of its own.
ROLES = (("Dagster daemon", ("dagster-daemon",)), ("refresh runs", ("dagster api execute",
                                                                    "execute_run")),
         ("code server", ("dagster api grpc", "dagster code-server")),
         ("edge", (" serve", "granian")), ("live tail", (" tail",)),
         ("live market", (" simulate", " live")), ("chain follower", (" ingest evm",)),
         ("up", (" up",)))
# What --kill-each kills, in this order: `up`'s components, by their names in its log.
COMPONENTS = ("live market", "live tail", "code server", "Dagster daemon", "edge")


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def sample(session: int) -> dict[str, dict[str, float]]:
    """Each role's summed PSS and RSS (MB) and process count, and the whole stack's."""
    roles: dict[str, dict[str, float]] = {}
    for p in session_processes(session, ROLES, memory=True).values():
        if p.role == "this bench":
            continue
        got = roles.setdefault(p.role, {"pss_mb": 0.0, "rss_mb": 0.0, "processes": 0})
        got["pss_mb"] += p.pss_bytes / MB
        got["rss_mb"] += p.rss_bytes / MB
        got["processes"] += 1
    roles["whole stack"] = {k: sum(r[k] for r in roles.values())
                            for k in ("pss_mb", "rss_mb", "processes")}
    return roles


def slope(points: list[tuple[float, float]]) -> float:
    """The least-squares slope of (seconds, MB) points, in MB an hour."""
    n = len(points)
    if n < 2:
        return 0.0
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    var = sum((t - mx) ** 2 for t, _ in points)
    return 0.0 if var == 0 else 3600 * sum((t - mx) * (v - my) for t, v in points) / var


def summary(series: list[tuple[float, dict]], warm_s: float) -> dict[str, dict[str, float]]:
    """Per role: memory at the end of the warm-up and at the end, the most seen after it, and
    the slope after it."""
    after = [(t, s) for t, s in series if t >= warm_s] or series[-1:]
    out = {}
    for role in sorted({r for _, s in series for r in s}):
        pss = [(t, s[role]["pss_mb"]) for t, s in after if role in s]
        rss = [(t, s[role]["rss_mb"]) for t, s in after if role in s]
        if not pss:
            continue
        out[role] = {"pss_mb_warm": round(pss[0][1]), "pss_mb_end": round(pss[-1][1]),
                     "pss_mb_max": round(max(v for _, v in pss)),
                     "rss_mb_max": round(max(v for _, v in rss)),
                     "pss_mb_per_hour": round(slope(pss), 1),
                     "rss_mb_per_hour": round(slope(rss), 1)}
    return out


def _marks(base: str) -> tuple[str, str] | None:
    """The as-of instants of the served snapshot and of the live tail on it ("" before any),
    or None when the edge does not answer its status."""
    try:
        answer = httpx.get(base + "/status", timeout=5)
        body = answer.json()
        return ((body["snapshot"] or {}).get("as_of", ""), (body["live"] or {}).get("as_of", "")) \
            if answer.status_code == 200 else None
    except (httpx.HTTPError, ValueError, KeyError):
        return None


def _round(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def kill_each(up: subprocess.Popen, base: str, log: Path, within_s: float = 600) -> dict:
    """Each component killed in turn: seconds until `up` restarted it, the edge's status reads
    answered meanwhile, and seconds until a newer snapshot and a newer live tail than those
    served at the kill were served."""
    out = {}
    for name in COMPONENTS:
        child = next(p for p in session_processes(up.pid, ROLES).values()
                     if p.parent == up.pid and p.role == name)
        before = _marks(base) or ("", "")
        restarts_before = log.read_text().count(f"the {name} restarted (pid ")
        killed = time.monotonic()
        os.kill(child.pid, signal.SIGKILL)
        restarted: float | None = None
        newer: list[float | None] = [None, None]
        answered = unanswered = 0
        while (now := time.monotonic()) - killed < within_s and None in newer:
            if up.poll() is not None:
                raise SystemExit(f"`chaintape up` stopped (exit {up.returncode}) after the "
                                 f"{name} was killed; see {log}")
            if restarted is None and \
                    log.read_text().count(f"the {name} restarted (pid ") > restarts_before:
                restarted = now - killed
            marks = _marks(base)
            answered += marks is not None
            unanswered += marks is None
            for i in range(2):
                if restarted is not None and marks and newer[i] is None and marks[i] > before[i]:
                    newer[i] = now - killed
            time.sleep(0.5)
        out[name] = {"restarted_s": _round(restarted), "newer_snapshot_s": _round(newer[0]),
                     "newer_live_s": _round(newer[1]), "status_answered": answered,
                     "status_unanswered": unanswered}
        say(f"  killed the {name}: {out[name]}")
    return out


def lookups(base: str, asked: set[str]) -> list[int | str]:
    """The answers' statuses to a page of tokens and, for each token, its cohorts and its
    early buyers as `asked` names them, and with "pairs" a page of each pair list
    ("unanswered" where the edge did not answer)."""
    codes: list[int | str] = []
    try:
        for path in ("/pairs", "/trending", "/pairs/new") if "pairs" in asked else ():
            codes.append(httpx.get(base + path, params={"limit": 5}, timeout=10).status_code)
        page = httpx.get(base + "/tokens", params={"limit": 5}, timeout=10)
        codes.append(page.status_code)
        for item in page.json().get("items", []) if page.status_code == 200 else []:
            token = f"{base}/chains/{item['chain']['slug']}/tokens/{item['address']}"
            if "cohorts" in asked:
                codes.append(httpx.get(token + "/cohorts", timeout=10).status_code)
            if "traders" in asked:
                codes.append(httpx.get(token + "/traders", params={"cohort": "early_buyer"},
                                       timeout=10).status_code)
    except (httpx.HTTPError, ValueError, KeyError):
        codes.append("unanswered")
    return codes


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--warm-minutes", type=float, default=10)
    parser.add_argument("--every", type=float, default=10, help="seconds between samples")
    parser.add_argument("--home", default=str(REPO / "var" / "bench-soak"))
    parser.add_argument("--swaps", type=int, default=1_000_000)
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--kill-each", action="store_true",
                        help="after the hold, kill each component in turn and time its return")
    parser.add_argument("--lookups", nargs="?", const="cohorts,traders", default=None,
                        help="every minute, also ask the edge for a page of tokens and, for "
                             "each, what this comma list names: cohorts (its cohorts), "
                             "traders (its early buyers), pairs (a page of /pairs, /trending and "
                             "/pairs/new); cohorts and traders when given alone")
    parser.add_argument("--up-args", default="",
                        help="what `up` follows instead of the simulator, e.g. \"--rpc URL "
                             "--venues FILE --hermes URL\" or \"--chains FILE\"")
    args = parser.parse_args()
    home = Path(args.home).absolute()
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    env = {**os.environ, "CHAINTAPE_HOME": str(home), "DAGSTER_HOME": str(home / "dagster"),
           "PORT": str(port)}
    command = [str(CLI), "up", *(shlex.split(args.up_args) if args.up_args else [
        "--swaps", str(args.swaps), *(["--fresh"] if args.fresh else [])])]
    log = open(home / "soak-up.log", "w")  # noqa: SIM115 - held for the child's life
    up = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                          start_new_session=True)
    base = f"http://127.0.0.1:{port}/api/v1"
    began = time.monotonic()
    try:
        while True:
            if up.poll() is not None:
                raise SystemExit(f"`chaintape up` stopped (exit {up.returncode}); see "
                                 f"{home / 'soak-up.log'}")
            try:
                if httpx.get(base + "/status", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(2)
        serving = time.monotonic()
        say(f"serving after {serving - began:.0f}s; holding {args.minutes:g} minutes")
        series: list[tuple[float, dict]] = []
        statuses: dict[str, int] = {}
        answered: dict[int | str, int] = {}
        last_said = serving
        while (now := time.monotonic()) - serving < 60 * args.minutes:
            series.append((now - serving, sample(up.pid)))
            try:
                status = httpx.get(base + "/status", timeout=10).json()["status"]
            except (httpx.HTTPError, ValueError, KeyError):
                status = "unanswered"
            statuses[status] = statuses.get(status, 0) + 1
            if now - last_said >= 60:
                if args.lookups is not None:
                    for code in lookups(base, set(filter(None, args.lookups.split(",")))):
                        answered[code] = answered.get(code, 0) + 1
                whole = series[-1][1]["whole stack"]
                say(f"  {(now - serving) / 60:5.1f} min: stack {whole['pss_mb']:,.0f} MB PSS "
                    f"({whole['rss_mb']:,.0f} MB RSS, {whole['processes']:.0f} processes); "
                    + ", ".join(f"{r} {s['pss_mb']:,.0f}" for r, s in sorted(series[-1][1].items())
                                if r != "whole stack"))
                last_said = now
            if up.poll() is not None:
                raise SystemExit(f"`chaintape up` stopped (exit {up.returncode})")
            time.sleep(args.every)
        failures = kill_each(up, base, home / "soak-up.log") if args.kill_each else None
    finally:
        with_up = up.poll() is None
        if with_up:
            os.killpg(up.pid, signal.SIGTERM)
            up.wait(120)
        log.close()
    said = (home / "soak-up.log").read_text()
    restarts, renewals = said.count(" restarted (pid "), said.count("renewed in place")
    print(json.dumps({"bench": "soak", "up": command[2:], "minutes": args.minutes,
                      "warm_minutes": args.warm_minutes, "serving_after_s": round(serving - began),
                      "statuses": statuses, "lookups": answered, "restarts": restarts,
                      "renewals": renewals, "failures": failures,
                      "roles": summary(series, 60 * args.warm_minutes)}))


if __name__ == "__main__":
    main()
