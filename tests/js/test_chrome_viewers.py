#!/usr/bin/env python3
"""test_chrome_viewers.py - the Chrome trace export opened in a real viewer.

Promises checked (issue 37): `gpu-profile export --format chrome-trace` of
a Monitor-only session (counters alone) and of a trace session each load in
speedscope, in headless Chromium, without a script error, and the page
shows their profiles (thread names, the count of profiles).  speedscope
comes from npm as a dev dependency of the tests only (tests/js/package.json,
installed into BUILD/js at the first run); the page is served from
127.0.0.1 by the standard library's http.server, the trace given by
#profileURL=.  Skips (77), saying why, without chromium, npm or the
package.

    test_chrome_viewers.py --build BUILD --source SOURCE
"""
import argparse
import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading

FIX_ID = "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"
# What a Monitor session writes: no kernel, copy or scope records.
MONITOR_TYPES = ("job_start", "device_metric_batch", "host_metric_batch",
                 "capture_capabilities", "shutdown")
PAGE_TIMEOUT_S = 120  # a page loads in seconds; a hung one never does


def skip(why):
    print("skip: " + why)
    sys.exit(77)


def chromium():
    for name in (os.environ.get("GP_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    skip("no chromium on the PATH (apt-get install chromium; scripts/install-deps.sh)")


def speedscope(build, source):
    """speedscope's release folder, npm-installed into BUILD/js once."""
    js = os.path.join(build, "js")
    rel = os.path.join(js, "node_modules", "speedscope", "dist", "release")
    if os.path.isfile(os.path.join(rel, "index.html")):
        return rel
    npm = shutil.which("npm")
    if not npm:
        skip("no npm to install speedscope (tests/js/package.json): apt-get install npm")
    os.makedirs(js, exist_ok=True)
    for f in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(source, "tests", "js", f), js)
    try:
        r = subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=js,
                           capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        skip("npm ci in %s took over 600 s (no registry?)" % js)
    if r.returncode != 0 or not os.path.isfile(os.path.join(rel, "index.html")):
        skip("npm ci in %s failed (no registry?): %s" % (js, r.stderr.strip()[-400:]))
    return rel


def monitor_session(src, dst):
    """The fixture session cut to what a Monitor session records."""
    os.makedirs(dst)
    for name in os.listdir(src):
        with open(os.path.join(src, name)) as f, open(os.path.join(dst, name), "w") as g:
            for line in f:
                m = re.search(r'"type":"([a-z_]+)"', line)
                if m and m.group(1) in MONITOR_TYPES:
                    g.write(line)


def export(build, session, out):
    r = subprocess.run([os.path.join(build, "gpu-profile"), "export", "--format",
                        "chrome-trace", "-o", out, session],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        print("export of %s failed (%d): %s" % (session, r.returncode, r.stderr))
        sys.exit(1)


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def load(browser, url, profile_dir):
    """The page's DOM once speedscope is done, and its console lines."""
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--user-data-dir=" + profile_dir, "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=15000", "--dump-dom", url]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=PAGE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, ["the page did not finish loading in %d s (speedscope hung)"
                      % PAGE_TIMEOUT_S]
    console = [l for l in r.stderr.splitlines() if ":CONSOLE" in l]
    return r.stdout, console


def text_of(dom):
    return re.sub(r"\s+", " ", re.sub(r"<[^>]*>", " ", dom or ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    browser = chromium()
    rel = speedscope(a.build, a.source)
    failures = 0
    with tempfile.TemporaryDirectory(prefix="gp_viewers.") as tmp:
        www = os.path.join(tmp, "www")
        shutil.copytree(rel, www)
        fixture = os.path.join(a.source, "tests", "fixtures", "gpufl-session", FIX_ID)
        mon = os.path.join(tmp, "monitor", FIX_ID)
        monitor_session(fixture, mon)
        export(a.build, mon, os.path.join(www, "monitor.json"))
        export(a.build, fixture, os.path.join(www, "trace.json"))
        srv = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Quiet, directory=www))
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        base = "http://127.0.0.1:%d/" % srv.server_address[1]
        # (trace, what the page must show): the first profile's name (pid
        # order) and, when there are several, "(1/N)", N the threads with
        # spans.
        cases = [
            ("monitor.json", ["host: sample_app (pid 4242) (pid 1), session (tid 0)"]),
            ("trace.json", ["host: sample_app (pid 4242) (pid 1), session (tid 0)", "(1/3)"]),
        ]
        for i, (trace, want) in enumerate(cases):
            dom, console = load(browser, base + "index.html#profileURL=" + base + trace,
                                os.path.join(tmp, "chrome%d" % i))
            text = text_of(dom)
            errors = [l for l in console
                      if re.search(r"ERROR:CONSOLE|Uncaught|Error|Tried to end frame", l)]
            if dom is None:
                errors = console
            missing = [w for w in want if w not in text]
            ok = dom is not None and not errors and not missing and \
                "Importing as Trace Event Format profile" in "\n".join(console)
            print("%s %s: %s" % ("ok" if ok else "FAIL", trace,
                                 "; ".join(errors + ["missing %r" % m for m in missing])
                                 or "rendered"))
            if not ok:
                print("  page text: " + text[-600:])
                failures += 1
        srv.shutdown()
    print("test_chrome_viewers: %d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
