"""Killing `tgc experiment` while it compiles must end its `tgc compile` child (and the
host compiler under it) with it: a rerun used to race with the orphaned compile.

usage: experiment_kill.py TGC SPEC WORKDIR

For SIGTERM and then SIGKILL: starts `tgc experiment` on a one-configuration matrix over
SPEC (CPU, compile stage), waits until its `tgc compile` child runs the host compiler, kills the
experiment, and checks that no process it started remains 3 s later. This script is a
child subreaper (prctl PR_SET_CHILD_SUBREAPER), so orphaned descendants become its
children and can be found in /proc. The matrix makes the compile take longer than the
3 s (24 layers: ~12 s here, force-recompiled), so an orphan that outlives its parent is seen.
Prints "experiment-kill: SIGNAL: no process left: PASS" per signal, or FAIL (exit 1)."""
import ctypes, json, os, signal, subprocess, sys, time

PR_SET_CHILD_SUBREAPER = 36


def children(pid):
    """Pids whose parent is `pid` (from /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(d))
    return out


def descendants(pid):
    todo, seen = [pid], []
    while todo:
        for c in children(todo.pop()):
            seen.append(c)
            todo.append(c)
    return seen


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main():
    tgc, spec, work = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("experiment-kill: cannot become a subreaper: FAIL")
        return 1
    os.makedirs(work, exist_ok=True)
    matrix = os.path.join(work, "kill.json")
    with open(matrix, "w") as f:
        json.dump({"name": "kill", "spec": spec, "target": "cpu", "memory": "1GiB",
                   "set": {"model.n_layers": 24},
                   "runs": [{"name": "a"}]}, f)
    me = os.getpid()
    ok = True
    for sig in (signal.SIGTERM, signal.SIGKILL):
        out = os.path.join(work, "out-" + sig.name)
        exp = subprocess.Popen([tgc, "experiment", matrix, "--out", out, "--stage", "compile",
                                "--force"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        compile_pid, deadline = None, time.time() + 120
        while compile_pid is None and time.time() < deadline and exp.poll() is None:
            for c in children(exp.pid):
                if " compile " in cmdline(c) + " ":
                    compile_pid = c
            time.sleep(0.02)
        if compile_pid is None:
            print(f"experiment-kill: {sig.name}: no tgc compile child seen "
                  f"(experiment exit {exp.poll()}): FAIL")
            ok = False
            exp.kill()
            exp.wait()
            continue
        # Into the host compile: the compile's own child (the host compiler) is running.
        while time.time() < deadline and len(descendants(exp.pid)) < 2 and exp.poll() is None:
            time.sleep(0.02)
        time.sleep(0.2)
        still = descendants(exp.pid)
        exp.send_signal(sig)
        exp.wait()
        time.sleep(3)
        reap()
        left = [p for p in descendants(me)]
        if left:
            print(f"experiment-kill: {sig.name}: {len(left)} process(es) left: " +
                  "; ".join(f"{p} {cmdline(p)[:80]}" for p in left) + ": FAIL")
            ok = False
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.5)
            reap()
        else:
            print(f"experiment-kill: {sig.name}: {len(still)} descendants at the kill, "
                  "no process left: PASS")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
