"""Hostile sweep of issue 40: run its cases against the CLI and a live `gpuplan serve`, and count
what must stay at zero. Run: python scripts/hostile_sweep.py [--big-mb 200] [--requests 500]

Counted: tracebacks (a traceback or an 'internal error' line, exit 70), hangs (a command past its
time limit), HTTP 500s and reset connections, stuck workers (estimate slots still taken after the
FIFO race: requests turned away 503 or not answered afterwards), files lost (an input or a target
changed by a refused command) or loosened (a file's mode widened, a link replaced), requests turned
away (503) with 32 clients at once, and wrong answers (an exit or HTTP status other than the case
expects, or a refusal that is not one line). Each refusal of a big file is timed, with the
process's peak memory (wait4's ru_maxrss).

Measure another checkout by pointing PYTHONPATH at its src/ (the subprocesses inherit it).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
LOG = ROOT / "tests" / "fixtures" / "logs" / "megatron_mixtral.log"
MIXTRAL = ["--model", "mixtral-8x7b", "--gpu", "h100", "--gpus", "16", "--seq-len", "2048", "--ep", "4", "--zero", "1",
           "--tp", "1", "--pp", "1"]
TRIAL = ROOT / "tests" / "fixtures" / "h200" / "profile_llama-3.2-1b_bf16_mb2_s2048.json"
LLAMA2 = json.loads((ROOT / "examples" / "llama-2-7b" / "config.json").read_text())
TITAN = ("[rank0]:[titan] 2026-05-18 16:04:46,338 - root - INFO - step: {}  loss:  3.24405  grad_norm:  0.8319  "
         "memory:  9.46GiB(64.99%)  tps: 7,282  tflops: 0.52  mfu: 0.17%\n")
TALLY: Counter = Counter()
TIMINGS: list[tuple[str, float, float]] = []


def gpuplan(args: list[str], expect: tuple[int, ...] = (2,), timeout: float = 120, stdout=subprocess.PIPE,
            label: str = "") -> subprocess.CompletedProcess | None:
    """One CLI case in its own process: counted, timed, its peak memory kept for big files."""
    TALLY["cases"] += 1
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "gpuplan", *args], stdout=stdout, stderr=subprocess.PIPE)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        TALLY["hangs"] += 1
        print(f"HANG {args}")
        return None
    peak = _peak_rss(proc)
    seconds = time.perf_counter() - start
    err_text = err.decode("utf-8", "replace")
    if "Traceback" in err_text or "internal error" in err_text or proc.returncode == 70:
        TALLY["tracebacks"] += 1
        print(f"TRACEBACK {args}: {err_text.strip()[-300:]}")
    elif proc.returncode not in expect or (proc.returncode == 2 and err_text.count("\n") != 1):
        TALLY["wrong"] += 1
        print(f"WRONG {args}: exit {proc.returncode} (expected {expect}): {err_text.strip()[:200]}")
    if label:
        TIMINGS.append((label, seconds, peak))
    return subprocess.CompletedProcess(args, proc.returncode, out, err_text)


def _peak_rss(proc: subprocess.Popen) -> float:
    """The finished child's peak resident memory in MiB (Linux ru_maxrss is KiB)."""
    usage = getattr(proc, "_usage", None)
    return usage.ru_maxrss / 1024 if usage else float("nan")


class _Popen(subprocess.Popen):
    """Popen that keeps the child's rusage (wait4) for the peak-memory column."""

    def _try_wait(self, wait_flags):  # noqa: ANN001 - CPython's hook
        try:
            pid, status, self._usage = os.wait4(self.pid, wait_flags)
        except ChildProcessError:
            pid, status = self.pid, 0
        return pid, status


subprocess.Popen = _Popen  # type: ignore[misc]


def snapshot(*paths: Path) -> dict[Path, tuple]:
    return {p: (p.is_symlink(), os.readlink(p) if p.is_symlink() else None,
                p.read_bytes() if p.exists() and not p.is_symlink() else None,
                stat.S_IMODE(p.lstat().st_mode) if p.exists() or p.is_symlink() else None) for p in paths}


def unchanged(before: dict[Path, tuple], what: str) -> None:
    for path, (link, target, data, mode) in before.items():
        now = snapshot(path)[path]
        if now[0] != link or now[1] != target or now[2] != data:
            TALLY["files_lost"] += 1
            print(f"LOST {path} ({what})")
        elif now[3] != mode:
            TALLY["files_loosened"] += 1
            print(f"LOOSENED {path}: {oct(mode or 0)} -> {oct(now[3] or 0)} ({what})")


def write_big(path: Path, megabytes: int, first: str, line, end: str = "") -> Path:
    with open(path, "w") as handle:
        handle.write(first)
        size, n = 0, 0
        while size < megabytes * 10**6:
            n += 1
            text = line(n)
            handle.write(text)
            size += len(text)
        handle.write(end)
    return path


def files_cases(tmp: Path, big_mb: int) -> Path:
    """Items 4-8: writers, readers, measurement files. Returns a calibration file for the server."""
    plan = tmp / "p.yaml"
    shutil.copy(ROOT / "examples" / "article-7b.yaml", plan)
    for flag in ("--out", "--markdown"):
        before = snapshot(plan)
        gpuplan(["report", str(plan), flag, str(plan), "--no-plots"])
        unchanged(before, f"report {flag} over its plan")
    cal = tmp / "c.json"
    cal.write_text("{}")
    cal.chmod(0o600)
    gpuplan(["calibrate", str(LOG), *MIXTRAL, "--out", str(cal)], expect=(0,))
    if stat.S_IMODE(cal.stat().st_mode) != 0o600:
        TALLY["files_loosened"] += 1
        print(f"LOOSENED {cal}: 0o600 -> {oct(stat.S_IMODE(cal.stat().st_mode))} (calibrate --out)")
    target, link = tmp / "target.json", tmp / "link.json"
    target.write_text("keep\n")
    target.chmod(0o640)
    link.symlink_to(target)
    before = snapshot(link, target)
    gpuplan(["calibrate", str(LOG), *MIXTRAL, "--out", str(link)])
    unchanged(before, "calibrate --out a symbolic link")
    titan = write_big(tmp / "big.log", big_mb, "", lambda n: TITAN.format(n))
    gpuplan(["calibrate", str(titan)], label=f"{big_mb} MB torchtitan log, no --model")
    table = write_big(tmp / "big.json", big_mb, "[\n", lambda n: '{"step": %d, "step_time_s": 1.25, "tokens_per_s": '
                      '100000, "memory_gib": 40.5},\n' % n, '{"step": 0, "step_time_s": 1}]\n')
    gpuplan(["calibrate", str(table)], label=f"{big_mb} MB JSON table, no --model")
    gpuplan(["calibrate", str(table), *MIXTRAL[:8]], label=f"{big_mb} MB JSON table, with the flags")
    titan.unlink()
    table.unlink()
    deep = tmp / "trainer_state.json"
    deep.write_text('{"log_history": ' + "[" * 100_000 + "]" * 100_000 + "}")
    gpuplan(["calibrate", str(deep)])
    gpuplan(["calibrate", str(deep), *MIXTRAL[:8]])
    trial = json.loads(TRIAL.read_text())
    for part, key, value in (("environment", "peak_flops", -1e12), ("config", "summary", 5),
                             ("environment", "peak_flops", "fast"), ("results", "mfu", 7.0)):
        broken = json.loads(json.dumps(trial))
        broken[part][key] = value
        path = tmp / f"m_{key}.json"
        path.write_text(json.dumps(broken))
        gpuplan(["calibrate", str(path)])
    return cal


def config_cases(tmp: Path) -> None:
    """Item 9: configs that say llama but are not decoder-only transformers; a VLM."""
    for change in ({"architectures": ["T5ForConditionalGeneration"]}, {"architectures": ["MambaForCausalLM"]},
                   {"architectures": ["BertForMaskedLM"]}, {"is_encoder_decoder": True}):
        path = tmp / "cfg.json"
        path.write_text(json.dumps(LLAMA2 | change))
        gpuplan(["memory", "--model", str(path), "--gpu", "h100", "--gpus", "8"])
    llava = tmp / "llava.json"
    llava.write_text(json.dumps({"model_type": "llava", "architectures": ["LlavaForConditionalGeneration"],
                                 "text_config": LLAMA2, "vision_config": {"hidden_size": 1024}}))
    done = gpuplan(["memory", "--model", str(llava), "--gpu", "h100", "--gpus", "8", "--json"], expect=(0,))
    if done is not None and done.returncode == 0 and "tower left out" not in done.stdout.decode():
        TALLY["wrong"] += 1
        print("WRONG llava: the answer does not say the vision tower is left out")


def small_cases(tmp: Path) -> None:
    """Items 10-11."""
    for args in (["memory", "llama-3.1-8b", "--margin", "1e-400"], ["budget", "llama-3.1-8b", "--restart", "0"],
                 ["budget", "llama-3.1-8b", "--restart", "0min"], ["serve", "--host", "0.0.0.0\n"],
                 ["report", str(ROOT / "examples" / "article-7b.yaml"), "--no-plots", "--out", str(tmp / "x.html\n")]):
        gpuplan(args)
    done = gpuplan(["plan", "llama-3.1-8b", "--gpu", "h100", "--gpus", "24", "--gpus-per-node", "3", "--json"],
                   expect=(0,))
    if done is not None and done.returncode == 0 and json.loads(done.stdout)["results"].get("io_nodes") != 8:
        TALLY["wrong"] += 1
        print("WRONG --gpus-per-node 3: the I/O section does not count 8 nodes")
    for name, text in (("over.yaml", "model: llama-3.1-8b\ngpus: 1e400\n"), ("null.yaml", "model:\ngpus:\n"),
                       ("anchor.yaml", "model: &m llama-3.1-8b\ngpu: h100\n")):
        (tmp / name).write_text(text)
        gpuplan(["memory", str(tmp / name), "--gpus", "8", "--gpu", "h100"])
    for args in (["train"], ["plan", "llama-3.1-8b"], ["catalog", "models"], ["infer", "llama-3.1-8b"], ["validate"],
                 ["memory", "llama-3.1-8b", "--full"]):
        read, write = os.pipe()
        os.close(read)
        done = gpuplan(args, expect=(141,), stdout=write)
        os.close(write)
        if done is not None and done.stderr:
            TALLY["wrong"] += 1
            print(f"WRONG {args} | (closed): printed {done.stderr.strip()[:120]}")
    with open("/dev/full", "w") as full:
        gpuplan(["catalog", "models"], stdout=full)


def server_cases(tmp: Path, calibration: Path, requests: int) -> None:
    from bench_server import DEFAULT_PLAN, free_port, one_round

    folder = tmp / "cals"
    folder.mkdir()
    shutil.copy(calibration, folder / "good.json")
    port = free_port()
    with open(tmp / "server.log", "wb") as log:
        server = _serve(port, folder, log)
        try:
            _huge_integers(port)
            _fifo_race(port, folder)
            _stuck_workers(port)
            for body_of, label in ((lambda i: DEFAULT_PLAN, "default plan"),
                                   (lambda i: DEFAULT_PLAN | {"tokens": f"{1 + i / 1e4:.4f}T"}, "distinct plans")):
                got = asyncio.run(one_round(port, "/api/plan", 32, requests, body_of))
                TALLY["http_requests"] += requests
                TALLY["rejected_under_load"] += got["statuses"].get("503", 0)
                TALLY["http_500"] += got["statuses"].get("500", 0)
                print(f"32 clients, {label}: {got['statuses']}, p99 {got['p99']:.2f} s")
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:  # a worker blocked on a FIFO keeps the process alive
                server.kill()
                server.wait(10)


def _serve(port: int, folder: Path, log) -> subprocess.Popen:
    """`gpuplan serve --calibration-dir folder` on ``port``; returns once /api/health answers."""
    server = subprocess.Popen([sys.executable, "-m", "gpuplan", "serve", "--port", str(port), "--calibration-dir",
                               str(folder)], stdout=log, stderr=log)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/api/health")
            if conn.getresponse().status == 200:
                return server
        except OSError:
            time.sleep(0.3)
    server.kill()
    raise SystemExit("gpuplan serve did not start")


def _post(conn: http.client.HTTPConnection, path: str, body: str) -> int:
    conn.request("POST", path, body=body, headers={"content-type": "application/json"})
    response = conn.getresponse()
    response.read()
    return response.status


def _huge_integers(port: int) -> None:
    """Item 1: a 400-digit integer in every numeric field of every route, then the next request on
    the same kept-alive connection."""
    from gpuplan.jobs import JOBS

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for name in ("training", "budget", "memory", "plan", "inference"):
        schema = JOBS[name].schema.model_json_schema()["properties"]
        for field, spec in schema.items():
            if "number" not in json.dumps(spec) and "integer" not in json.dumps(spec):
                continue
            TALLY["http_requests"] += 1
            status = None
            try:
                status = _post(conn, f"/api/{name}", f'{{"model": "llama-3.1-8b", "{field}": {"9" * 400}}}')
                conn.request("GET", "/api/health")
                conn.getresponse().read()
            except (OSError, http.client.HTTPException):
                TALLY["connection_resets"] += 1
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            TALLY["http_500"] += status is not None and status >= 500
            TALLY["wrong"] += status not in (422, 500, None)


def _fifo_race(port: int, folder: Path, rounds: int = 200) -> None:
    """Item 2: the calibration file swapped between a regular file and a FIFO while it is asked for."""
    name, stop = folder / "race.json", threading.Event()
    good = (folder / "good.json").read_bytes()

    def swap() -> None:
        while not stop.is_set():
            for make in (lambda: name.write_bytes(good), lambda: os.mkfifo(name)):
                try:
                    name.unlink(missing_ok=True)
                    make()
                except OSError:
                    pass
                time.sleep(0.0005)

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    statuses: Counter = Counter()

    def ask(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for i in range(rounds // 4):
            body = json.dumps({"model": "llama-3.1-8b", "gpu": "h100", "gpus": 8 * (1 + k * rounds + i),
                               "calibration": "race"})
            try:
                statuses[_post(conn, "/api/memory", body)] += 1
            except (OSError, http.client.HTTPException):
                statuses["timeout"] += 1
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    askers = [threading.Thread(target=ask, args=(k,)) for k in range(4)]
    for thread in askers:
        thread.start()
    for thread in askers:
        thread.join()
    stop.set()
    swapper.join()
    TALLY["http_requests"] += sum(statuses.values())
    TALLY["http_500"] += statuses.get(500, 0)
    print(f"FIFO race, {rounds} requests: {dict(statuses)}")


def _stuck_workers(port: int, probes: int = 8) -> None:
    """After the race: 8 requests at once must all be answered (a worker blocked on a FIFO keeps
    its slot: 503 'estimates are already running', or no answer)."""
    results: list = []

    def probe(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        body = json.dumps({"model": "llama-3.1-8b", "gpu": "h100", "gpus": 4096 + 8 * k})
        try:
            results.append(_post(conn, "/api/memory", body))
        except (OSError, http.client.HTTPException):
            results.append("timeout")

    threads = [threading.Thread(target=probe, args=(k,)) for k in range(probes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    TALLY["http_requests"] += probes
    TALLY["stuck_workers"] += sum(1 for r in results if r != 200)
    print(f"after the race, {probes} requests at once: {results}")


class _kept:
    def __init__(self, folder: str) -> None:
        self.folder = folder

    def __enter__(self) -> str:
        return self.folder

    def __exit__(self, *exc: object) -> None:
        return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--big-mb", type=int, default=200)
    parser.add_argument("--requests", type=int, default=500, help="requests per load round (32 clients)")
    parser.add_argument("--keep", help="work in this (new) folder and keep it: the files and server.log")
    args = parser.parse_args()
    if args.keep:
        os.makedirs(args.keep)
    with (tempfile.TemporaryDirectory(prefix="gpuplan-sweep-") if not args.keep else _kept(args.keep)) as folder:
        tmp = Path(folder)
        calibration = files_cases(tmp, args.big_mb)
        config_cases(tmp)
        small_cases(tmp)
        server_cases(tmp, calibration, args.requests)
    print("\n| count | value |\n|---|---|")
    for key in ("cases", "http_requests", "tracebacks", "hangs", "http_500", "connection_resets", "stuck_workers",
                "files_lost", "files_loosened", "rejected_under_load", "wrong"):
        print(f"| {key} | {TALLY[key]:,} |")
    print("\n| refusal | seconds (whole process) | peak memory |\n|---|---|---|")
    for label, seconds, peak in TIMINGS:
        print(f"| {label} | {seconds:.2f} s | {peak:,.0f} MiB |")


if __name__ == "__main__":
    main()
