#!/usr/bin/env python3
"""The fault campaign: many small TCP and MPI jobs, each with one random fault.

Every job replays a compiled plan with `collplan run` on K processes (one per
rank) and injects one fault; the outcome of the job is put in one of five
classes, per fault kind:

  completed    every rank that was not killed exited 0 and said its output
               bytes equal the direct computation
  clear error  the job ended (within the documented bound) with at least one
               rank exiting 2 or 4 and a `collplan: error:` line that names a
               rank or the file; under MPI, mpirun ended non-zero naming the
               process that died
  hung         some process was still running past the bound; it is killed
  wrong bytes  a rank exited 1 (a replay differs) or exited 0 without the
               "equals the direct computation" line
  exit 3       a rank reported an internal error

A kind of fault either must complete (stray connections, a short stop, delay
and loss), must end in a clear error (a foreign plan or key, a long stop, a
full disk), or may do either (a rank killed or stopped past the step timeout
at a random moment may have finished its part; a proxy that damages the
stream after a random offset may find the stream ends before it). The campaign fails (exit 1) on any hang, wrong bytes or
exit 3, and on any job whose outcome its kind does not allow.
See docs/reliability.md for the fault kinds, the bounds and the figures.

  scripts/faults.py [--collplan PATH] [--tcp-jobs N] [--mpi-jobs N] [--seed S]
                    [--kinds k1,k2] [--json FILE] [-v]
"""
import argparse
import collections
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

# Documented bounds (docs/reliability.md): a step waits at most STEP_MS for a
# peer, the handshake at most CONNECT_MS; a job with a fault ends within
# CONNECT_MS + 2 * STEP_MS + SLACK_S.
STEP_MS = 2000
CONNECT_MS = 4000
SLACK_S = 5.0
SLOW_LINK_EXTRA_S = 20.0
LEN = 16384  # elements per vector
REPS = 100    # timed repetitions: a job lasts long enough to be hit mid-run

OK_LINE = "equals the direct computation"

# kind -> (what the job must do: "complete", "error" or "either")
TCP_KINDS = {
    "none": "complete",
    "kill": "either",
    "stop-short": "complete",
    "stop-long": "either",
    "stray-garbage": "complete",
    "stray-silent": "complete",
    "stray-half-hello": "complete",
    "foreign-plan": "error",
    "foreign-key": "error",
    "no-key": "error",
    "corrupt-frame": "error_or_untouched",
    "huge-length": "error_or_untouched",
    "cut-connection": "error_or_untouched",
    "netns-delay-loss": "complete",
    "slow-link": "complete",
    "disk-full-trace": "error",
}
OPS = [
    ("encode", ["--op", "encode", "--field", "gf256", "--matrix", "random"]),
    ("allgather", ["--op", "allgather"]),
    ("allreduce", ["--op", "allreduce", "--field", "gf256"]),
    ("broadcast", ["--op", "broadcast", "--blocks", "4"]),
    ("reduce-scatter", ["--op", "reduce-scatter", "--field", "gf256"]),
]


def log(ctx, *a):
    if ctx.verbose:
        print(*a, file=sys.stderr, flush=True)


class Ctx:
    pass


def free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def plan_for(ctx, op, K, variant=0):
    key = (op, K, variant)
    if key in ctx.plans:
        return ctx.plans[key]
    path = os.path.join(ctx.work, f"{op}-{K}-{variant}.cplan")
    flags = dict(OPS)[op]
    cmd = [ctx.collplan, "compile", "--K", str(K), *flags, "-o", path]
    if op == "encode":
        cmd += ["--seed", str(7 + variant)]
    elif variant:
        # Another plan for the same K: another number of ports.
        cmd += ["--p", "2"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"faults: cannot compile {cmd}: {r.stderr}")
    ctx.plans[key] = path
    return path


def keygen(ctx, name):
    path = os.path.join(ctx.work, name)
    if not os.path.exists(path):
        r = subprocess.run([ctx.collplan, "keygen", "-o", path], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"faults: collplan keygen failed: {r.stderr}")
    return path


# ---- stray connections and the interposing proxy --------------------------

def stray(port, mode, stop, rng):
    """Connects to a rank's port and misbehaves until `stop` is set."""
    deadline = time.time() + CONNECT_MS / 1000
    while not stop.is_set() and time.time() < deadline:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=0.5)
            break
        except OSError:
            time.sleep(0.01)
    else:
        return
    try:
        if mode == "garbage":
            s.sendall(bytes(rng.getrandbits(8) for _ in range(64)))
        elif mode == "half-hello":
            s.sendall(b"CPLNTCP")
        stop.wait(CONNECT_MS / 1000 + 1)
    except OSError:
        pass
    finally:
        s.close()


class Proxy(threading.Thread):
    """Forwards one listening port to a rank's real port and damages the
    first stream (either direction of any connection through it) that
    passes `offset` bytes: flips a byte (corrupt-frame), writes 0xff over 8
    bytes (huge-length: whatever header field is there becomes huge) or
    closes both sides (cut-connection). slow-link forwards everything in
    small, delayed pieces."""

    def __init__(self, target_port, mode, offset):
        super().__init__(daemon=True)
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(4)
        self.port = self.srv.getsockname()[1]
        self.target, self.mode, self.offset = target_port, mode, offset
        self.touched = False
        self.lock = threading.Lock()
        self.stop = threading.Event()

    def run(self):
        self.srv.settimeout(0.2)
        while not self.stop.is_set():
            try:
                a, _ = self.srv.accept()
            except OSError:
                continue
            try:
                b = socket.create_connection(("127.0.0.1", self.target), timeout=2)
            except OSError:
                a.close()
                continue
            # Blocking from here on: a quiet direction is not an error.
            a.settimeout(None)
            b.settimeout(None)
            threading.Thread(target=self.pump, args=(a, b), daemon=True).start()
            threading.Thread(target=self.pump, args=(b, a), daemon=True).start()

    def claim(self):
        with self.lock:
            first = not self.touched
            self.touched = True
            return first

    def pump(self, src, dst):
        seen = 0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if self.mode == "slow-link":
                    # Small pieces, each after a random delay: a slow,
                    # jittery path (order is kept, as TCP keeps it).
                    for i in range(0, len(data), 1400):
                        time.sleep(random.uniform(0, 0.004))
                        dst.sendall(data[i:i + 1400])
                    continue
                if seen <= self.offset < seen + len(data) and self.claim():
                    i = self.offset - seen
                    buf = bytearray(data)
                    if self.mode == "corrupt-frame":
                        buf[i] ^= 0x5A
                    elif self.mode == "huge-length":
                        for j in range(i, min(i + 8, len(buf))):
                            buf[j] = 0xFF
                    elif self.mode == "cut-connection":
                        dst.sendall(bytes(buf[:i]))
                        raise OSError("cut")
                    data = bytes(buf)
                seen += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.stop.set()
        self.srv.close()


# ---- network namespace with netem on loopback ------------------------------

def netns_available(ctx):
    """A network namespace whose loopback delays and drops packets: netem
    (delay 2 ms ± 1 ms, 1 % loss) where the kernel has it, else a token
    bucket with a queue so short that bursts are dropped (loss) and queued
    (delay). Returns the namespace's name, or "" where none can be made."""
    if ctx.netns is not None:
        return ctx.netns
    name = f"cpfault{os.getpid()}"
    ctx.netns, ctx.shaping = "", ""
    if not (shutil.which("ip") and shutil.which("tc")):
        return ctx.netns
    if subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode != 0:
        return ctx.netns
    # An Ethernet MTU, so that a message is many packets, as on a network.
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "mtu", "1500", "up"], capture_output=True)
    for shaping in (["netem", "delay", "2ms", "1ms", "loss", "1%"],
                    ["tbf", "rate", "200mbit", "burst", "16kb", "limit", "48kb"]):
        if subprocess.run(["tc", "-n", name, "qdisc", "add", "dev", "lo", "root", *shaping],
                          capture_output=True).returncode == 0:
            ctx.netns, ctx.shaping = name, " ".join(shaping)
            return ctx.netns
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return ctx.netns


def netns_drops(ctx):
    out = subprocess.run(["tc", "-n", ctx.netns, "-s", "qdisc", "show", "dev", "lo"], capture_output=True,
                         text=True).stdout
    words = out.replace(",", " ").replace("(", " ").split()
    return int(words[words.index("dropped") + 1]) if "dropped" in words else 0


def tiny_disk(ctx):
    """A 16 KiB tmpfs to write a trace onto (a full disk), or /dev/full."""
    if ctx.tiny is not None:
        return ctx.tiny
    d = os.path.join(ctx.work, "tiny")
    os.makedirs(d, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", d], capture_output=True).returncode == 0:
        with open(os.path.join(d, "fill"), "wb") as f:
            try:
                f.write(b"\0" * 16384)
            except OSError:
                pass
        ctx.tiny = os.path.join(d, "trace.json")
        ctx.mounted = d
    else:
        ctx.tiny = "/dev/full"
    return ctx.tiny


# ---- one TCP job ------------------------------------------------------------

def classify(results, killed, kind_rule, untouched=False):
    """results: list of (rank, returncode, stdout, stderr) of the ranks that
    were not killed."""
    if any(rc == 3 or "internal error" in err for _, rc, _, err in results):
        return "exit 3"
    if any(rc == 1 for _, rc, _, _ in results):
        return "wrong bytes"
    if any(rc == 0 and OK_LINE not in out for _, rc, out, _ in results):
        return "wrong bytes"
    if all(rc == 0 for _, rc, _, _ in results):
        return "completed"
    failing = [(r, rc, err) for r, rc, _, err in results if rc != 0]
    if all(rc in (2, 4) and "collplan: error:" in err for _, rc, err in failing):
        return "clear error"
    return "unclear error"


def allowed(rule, outcome, touched):
    if rule == "complete":
        return outcome == "completed"
    if rule == "error":
        return outcome == "clear error"
    if rule == "error_or_untouched":
        return outcome == "clear error" or (outcome == "completed" and not touched)
    return outcome in ("completed", "clear error")


def tcp_job(ctx, jid, kind, rng):
    K = rng.randint(3, ctx.max_k)
    op = rng.choice([o for o, _ in OPS])
    plan = plan_for(ctx, op, K)
    ports = free_ports(K)
    peers = [f"127.0.0.1:{p}" for p in ports]
    keyed = ctx.have_keys and (kind in ("foreign-key", "no-key") or rng.random() < 0.5)
    key = keygen(ctx, "job.key") if keyed else None
    odd = rng.randrange(K)  # the rank the fault is about
    plans = [plan] * K
    keys = [key] * K
    peer_lists = [list(peers) for _ in range(K)]
    trace = [None] * K
    prefix = []
    proxy = None
    if kind == "foreign-plan":
        plans[odd] = plan_for(ctx, op, K, variant=1)
    elif kind == "foreign-key":
        keys[odd] = keygen(ctx, "other.key")
    elif kind == "no-key":
        keys[odd] = None
    elif kind in ("corrupt-frame", "huge-length", "cut-connection", "slow-link"):
        # Higher ranks connect to lower ones: every rank above lo reaches lo
        # through the proxy, which damages the first stream past the offset
        # (beyond the handshake).
        lo = rng.randrange(K - 1)
        proxy = Proxy(ports[lo], kind, rng.randint(600, 2000))
        for hi in range(lo + 1, K):
            peer_lists[hi][lo] = f"127.0.0.1:{proxy.port}"
        proxy.start()
    elif kind == "netns-delay-loss":
        prefix = ["ip", "netns", "exec", netns_available(ctx)]
        drops_before = netns_drops(ctx)
    elif kind == "disk-full-trace":
        trace[0] = tiny_disk(ctx)

    # A stray connection is made to its target rank before the other ranks
    # start, so that it is accepted before any real peer.
    stop = threading.Event()
    helpers = []
    order = list(range(K))
    if kind.startswith("stray-"):
        order = [odd] + [r for r in range(K) if r != odd]
    procs = [None] * K
    # A slow or lossy link makes every repetition slow: fewer of them.
    reps = {"netns-delay-loss": REPS // 25, "slow-link": REPS // 5}.get(kind, REPS)
    t0 = time.time()
    for r in order:
        cmd = prefix + [ctx.collplan, "run", plans[r], "--transport", "tcp", "--peers", ",".join(peer_lists[r]),
                        "--rank", str(r), "--len", str(LEN), "--reps", str(reps), "--seed", "5",
                        "--timeout", str(STEP_MS), "--connect-timeout", str(CONNECT_MS)]
        if keys[r]:
            cmd += ["--key-file", keys[r]]
        if trace[r]:
            cmd += ["--trace", trace[r]]
        procs[r] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r == odd and kind.startswith("stray-"):
            mode = kind[len("stray-"):]
            for _ in range(rng.randint(1, 3)):
                th = threading.Thread(target=stray, args=(ports[odd], mode, stop, rng), daemon=True)
                th.start()
                helpers.append(th)
            time.sleep(0.2)

    killed = set()
    # A kill or stop lands at a random moment of the job's fault-free run
    # time (measured on the plan's first "none" job, or 0.5 s).
    span = ctx.span.get(plan, 0.5)
    if kind == "kill":
        time.sleep(rng.uniform(0, span))
        procs[odd].send_signal(signal.SIGKILL)
        killed.add(odd)
    elif kind in ("stop-short", "stop-long"):
        time.sleep(rng.uniform(0, span))
        procs[odd].send_signal(signal.SIGSTOP)
        time.sleep(rng.uniform(0.1, STEP_MS / 2000) if kind == "stop-short" else (STEP_MS + CONNECT_MS) / 1000 + 1)
        procs[odd].send_signal(signal.SIGCONT)

    bound = t0 + (CONNECT_MS + 2 * STEP_MS) / 1000 + SLACK_S
    if kind == "stop-long":
        bound += (STEP_MS + CONNECT_MS) / 1000 + 1
    if kind in ("netns-delay-loss", "slow-link"):
        bound += SLOW_LINK_EXTRA_S  # a job that makes progress, slowly, is not hung
    hung = False
    results = []
    for r, p in enumerate(procs):
        try:
            out, err = p.communicate(timeout=max(0.1, bound - time.time()))
        except subprocess.TimeoutExpired:
            hung = True
            p.kill()
            out, err = p.communicate()
        if r not in killed:
            results.append((r, p.returncode, out, err))
    elapsed = time.time() - t0
    stop.set()
    if proxy:
        proxy.close()
    touched = proxy.touched if proxy and kind != "slow-link" else True
    if kind == "netns-delay-loss":
        ctx.netns_dropped += netns_drops(ctx) - drops_before
    outcome = "hung" if hung else classify(results, killed, TCP_KINDS[kind])
    ok = allowed(TCP_KINDS[kind], outcome, touched)
    if kind == "none" and outcome == "completed":
        ctx.span.setdefault(plan, elapsed)
    errs = {r: e.strip().splitlines()[-1] for r, rc, _, e in results if rc != 0 and e.strip()}
    first_err = next(iter(errs.values()), "")
    rec = dict(job=jid, transport="tcp", kind=kind, op=op, K=K, keyed=bool(key), outcome=outcome, ok=ok,
               touched=touched, seconds=round(elapsed, 2), error=first_err)
    if ctx.verbose:
        rec["errors"] = errs
    log(ctx, json.dumps(rec))
    return rec


# ---- one MPI job ------------------------------------------------------------

def mpi_job(ctx, jid, rng):
    K = rng.randint(3, min(ctx.max_k, 8))
    op = rng.choice([o for o, _ in OPS])
    plan = plan_for(ctx, op, K)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    t0 = time.time()
    p = subprocess.Popen(["mpirun", "-np", str(K), ctx.collplan, "run", plan, "--transport", "mpi", "--len",
                          str(LEN), "--reps", "50", "--seed", "5"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    # Kill one rank's process at a random moment of the replay: 0.3 s to
    # 1 s after all K processes exist, past Open MPI's launch (a process
    # killed while mpirun is still launching it is Open MPI's start-up,
    # not a step of the plan; docs/reliability.md).
    victim = None
    deadline = time.time() + 10
    while time.time() < deadline and victim is None:
        kids = subprocess.run(["pgrep", "-P", str(p.pid), "-f", "collplan"], capture_output=True,
                              text=True).stdout.split()
        if len(kids) == K:
            time.sleep(rng.uniform(0.3, 1.0))
            victim = int(rng.choice(kids))
            try:
                os.kill(victim, signal.SIGKILL)
            except ProcessLookupError:
                victim = None
                break
        else:
            time.sleep(0.02)
    hung = False
    try:
        out, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        hung = True
        p.kill()
        out, err = p.communicate()
    elapsed = time.time() - t0
    if hung:
        outcome = "hung"
    elif "internal error" in err:
        outcome = "exit 3"
    elif p.returncode == 0:
        # The victim may have exited before the signal: then every rank
        # must have said its bytes are right.
        outcome = "completed" if out.count(OK_LINE) >= 1 and "differ" not in out else "wrong bytes"
    elif p.returncode == 1 and "differ" in (out + err):
        outcome = "wrong bytes"
    elif "signal 9" in err or "Killed" in err or "exited on signal" in err or "collplan: error:" in err:
        outcome = "clear error"
    else:
        outcome = "unclear error"
    ok = outcome in ("completed", "clear error")
    rec = dict(job=jid, transport="mpi", kind="mpi-kill", op=op, K=K, keyed=False, outcome=outcome, ok=ok,
               touched=victim is not None, seconds=round(elapsed, 2),
               error=next((l for l in err.splitlines() if "signal" in l or "error" in l), "").strip())
    log(ctx, json.dumps(rec))
    return rec


# ---- main -------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--collplan", default="build/compiler/collplan")
    ap.add_argument("--tcp-jobs", type=int, default=300)
    ap.add_argument("--mpi-jobs", type=int, default=50)
    ap.add_argument("--max-k", type=int, default=16)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kinds", default="", help="comma-separated TCP fault kinds (default: all)")
    ap.add_argument("--json", help="write every job's record here")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    ctx = Ctx()
    ctx.collplan = os.path.abspath(a.collplan)
    if not os.access(ctx.collplan, os.X_OK):
        sys.exit(f"faults: {a.collplan} is not an executable (build it first)")
    ctx.verbose, ctx.max_k, ctx.plans, ctx.span = a.verbose, a.max_k, {}, {}
    ctx.netns, ctx.tiny, ctx.mounted = None, None, None
    ctx.work = tempfile.mkdtemp(prefix="collplan-faults-")
    helptext = subprocess.run([ctx.collplan, "run", "--help"], capture_output=True, text=True).stdout
    ctx.have_keys = "--key-file" in helptext
    kinds = [k for k in (a.kinds.split(",") if a.kinds else TCP_KINDS)]
    for k in kinds:
        if k not in TCP_KINDS:
            sys.exit(f"faults: unknown fault kind '{k}' (valid: {', '.join(TCP_KINDS)})")
    skipped = []
    if not ctx.have_keys:
        skipped += [k for k in ("foreign-key", "no-key") if k in kinds]
    ctx.netns_dropped = 0
    if "netns-delay-loss" in kinds and not netns_available(ctx):
        skipped.append("netns-delay-loss")
    kinds = [k for k in kinds if k not in skipped]
    if skipped:
        print(f"faults: skipped (not available here): {', '.join(skipped)}", file=sys.stderr)

    rng = random.Random(a.seed)
    records = []
    try:
        for j in range(a.tcp_jobs):
            records.append(tcp_job(ctx, j, kinds[j % len(kinds)], random.Random(rng.getrandbits(64))))
        if a.mpi_jobs and shutil.which("mpirun"):
            for j in range(a.mpi_jobs):
                records.append(mpi_job(ctx, a.tcp_jobs + j, random.Random(rng.getrandbits(64))))
    finally:
        if ctx.netns:
            subprocess.run(["ip", "netns", "del", ctx.netns], capture_output=True)
        if ctx.mounted:
            subprocess.run(["umount", ctx.mounted], capture_output=True)
        shutil.rmtree(ctx.work, ignore_errors=True)

    cols = ["completed", "clear error", "hung", "wrong bytes", "exit 3", "unclear error"]
    table = collections.OrderedDict()
    for r in records:
        row = table.setdefault(r["kind"], dict(jobs=0, bad=0, secs=[], **{c: 0 for c in cols}))
        row["jobs"] += 1
        row[r["outcome"]] += 1
        row["bad"] += 0 if r["ok"] else 1
        row["secs"].append(r["seconds"])
    print("| fault | must | jobs | " + " | ".join(cols) + " | not allowed | slowest end (s) |")
    print("|---|---|---|" + "---|" * len(cols) + "---|---|")
    for k, row in table.items():
        must = TCP_KINDS.get(k, "either").replace("error_or_untouched", "error*")
        print(f"| {k} | {must} | {row['jobs']} | " + " | ".join(str(row[c]) for c in cols) +
              f" | {row['bad']} | {max(row['secs']):.1f} |")
    tot = {c: sum(r["outcome"] == c for r in records) for c in cols}
    bad = [r for r in records if not r["ok"]]
    print(f"total: {len(records)} jobs; " + ", ".join(f"{v} {c}" for c, v in tot.items()) +
          f"; {len(bad)} not allowed by their kind")
    for r in bad[:20]:
        print("  not allowed:", json.dumps(r))
    if ctx.netns and "netns-delay-loss" in table:
        print(f"netns-delay-loss: loopback shaped with `{ctx.shaping}`; {ctx.netns_dropped} packets dropped")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
