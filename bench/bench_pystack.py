#!/usr/bin/env python3
"""bench_pystack.py - what Python frames cost in a launch's CPU stack
(plugin/pystack.c; docs/performance.md, "Python frames in CPU stacks").

    python3 bench/bench_pystack.py [--build DIR] [--depth N] [--calls N] [--rounds N]

From the repository root after a build into build/ (its
bench/libpystack_bench.so).  A Python call chain N frames deep (default 30,
counted as the capture counts them: <module> included) calls into C, which
then, per figure, in thread CPU time:

  (a) calls fl_py_capture (the Python frames alone) --calls times in a loop
      from the innermost frame: the frames stay the same, so this is the
      steady cost per launch from one call site;
  (b) calls fl_stacks_capture (the whole capture: libunwind's walk of the
      native stack, the Python frames, the hash and the lookup) the same way;
  (c) from Python, --calls times: the chain built afresh and one capture
      at its end, minus the same chain calling a C function that does
      nothing - a training loop's case, where every step's frames are new
      (from 3.11 CPython makes each frame's object at the first look).

Each figure is the median over --rounds rounds of (round time / calls).
Target (issue 38): (a) <= 2 us for a 30-frame Python stack.
"""
import argparse
import ctypes
import gc
import os
import statistics
import sys
import time


def chain(n, fn):
    if n > 1:
        return chain(n - 1, fn)
    return fn()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--depth", type=int, default=30)
    ap.add_argument("--calls", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    lib = ctypes.PyDLL(os.path.join(a.build, "bench", "libpystack_bench.so"))
    lib.bench_loop.restype = ctypes.c_ulonglong
    if lib.bench_open() != 0:
        print("SKIP: built without libunwind and libdw")
        return 77
    # The frames below chain's: <module>, main and this call's own.
    base = chain(1, lib.bench_depth)
    rec = a.depth - base + 1
    depth = chain(rec, lib.bench_depth)
    print("CPython %s, %d Python frames at the capture" % (sys.version.split()[0], depth))
    gc.disable()
    for mode, what in ((0, "(a) fl_py_capture, same frames"),
                       (1, "(b) fl_stacks_capture, same frames")):
        runs = [chain(rec, lambda: lib.bench_loop(a.calls, mode)) / a.calls
                for _ in range(a.rounds)]
        print("%-44s %8.1f ns / capture" % (what, statistics.median(runs)))
    runs = []
    for _ in range(a.rounds):
        t0 = time.thread_time_ns()
        for _ in range(a.calls // 10):
            chain(rec, lib.bench_once)
        t1 = time.thread_time_ns()
        for _ in range(a.calls // 10):
            chain(rec, lib.bench_nothing)
        t2 = time.thread_time_ns()
        runs.append(((t1 - t0) - (t2 - t1)) / (a.calls // 10))
    print("%-44s %8.1f ns / capture" % ("(c) fl_stacks_capture, new frames each time",
                                         statistics.median(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
