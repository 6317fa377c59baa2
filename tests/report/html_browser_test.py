#!/usr/bin/env python3
"""html_browser_test.py - the HTML report (gpu-profile report --format html)
opened in a real browser: Debian's chromium, headless, --dump-dom.

Promises checked, for the checked-in fixture sessions and sessions written
here at run time (a hostile kernel name; with --large, 2 M kernel launches):
the page renders with no script error (report.js writes any into
#gp-errors and sets body data-rendered), the DOM shows the figures of the
JSON report of the same session (every hotspot's name and total_ns, every
device's means), a kernel's op and launching Python line in the hotspots
table, the timeline's data and --by line's groups, the hostile name is
text and never markup, and the
2 M-kernel page stays under 16 MB.  No timing is asserted.

usage: html_browser_test.py GPU_PROFILE FIXTURES_DIR [--large]
       html_browser_test.py GPU_PROFILE FIXTURES_DIR --screenshots DIR
Exit 77 (skipped, saying why) without chromium.
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
PAGE_LIMIT_BYTES = 16 * 1024 * 1024
HOSTILE = '</script><script>document.title="pwned"</script><b id="evil">&amp; x<y>'
SID = "5e55a0e1-0000-4000-8000-00000000beef"
T0 = 1760000000000000000


def chromium():
    for name in (os.environ.get("GP_CHROMIUM"), "chromium", "chromium-browser",
                 "google-chrome"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def browser_args(tmp):
    # A profile of its own: parallel runs never share one.
    return ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
            "--user-data-dir=" + os.path.join(tmp, "chromium-profile")]


def dump_dom(browser, tmp, page):
    r = subprocess.run([browser] + browser_args(tmp) + ["--dump-dom", "file://" + page],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if r.returncode != 0:
        sys.exit("chromium --dump-dom %s: exit %d: %s" % (page, r.returncode,
                                                         r.stderr.decode()[-2000:]))
    return r.stdout.decode("utf-8", "replace")


def report(gp, path, fmt, out=None, extra=()):
    cmd = [gp, "report", "--format", fmt] + list(extra) + (["-o", out] if out else []) + [path]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if r.returncode != 0:
        sys.exit("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.decode()))
    return r.stdout.decode()


def js_number(v):
    """A JSON number as the page's String(v) writes it."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return repr(v) if isinstance(v, float) else str(v)


def attr(s):
    """An attribute value as Chromium serialises it (&, ", <, > escaped)."""
    return html.escape(s, quote=True).replace("&#x27;", "'")


FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL: " + what)


def check_page(gp, browser, tmp, name, path):
    rep = json.loads(report(gp, path, "json"))
    page = os.path.join(tmp, name + ".html")
    report(gp, path, "html", page)
    raw = open(page, "rb").read()
    check(raw.startswith(b"<!DOCTYPE html>"), name + ": page starts with <!DOCTYPE html>")
    # The page's own four script elements close; nothing of the session does.
    check(raw.count(b"</script") == 4, name + ": %d </script (4 expected)" % raw.count(b"</script"))
    check(not re.search(rb"(src|href)\s*=\s*[\"']?(https?:)?//", raw),
          name + ": no reference to the network")
    dom = dump_dom(browser, tmp, page)
    m = re.search(r'<div id="gp-errors"[^>]*>(.*?)</div>', dom, re.S)
    check(m is not None and m.group(1).strip() == "",
          name + ": script errors: %r" % (m.group(1) if m else "no #gp-errors"))
    check('data-rendered="ok"' in dom, name + ": body data-rendered=ok")
    kernels = (rep.get("hotspots") or {}).get("kernels") or []
    for k in kernels:
        want = 'data-kernel="%s" data-total-ns="%d"' % (attr(k["name"]), k["total_ns"])
        check(want in dom, name + ": hotspot row " + want)
    for d in rep.get("devices") or []:
        for key in ("util_gpu_mean_pct", "power_mean_mw", "mem_used_max_bytes"):
            v = d.get(key)
            if v is None:
                want = 'data-key="%s">n/a<' % key
            else:
                want = 'data-key="%s" data-value="%s"' % (key, js_number(v))
            check(want in dom, name + ": device %s %s" % (d["device_id"], want))
    # Each optional part of the JSON report that is there has its section.
    for key, sec in (("stalls", "gp-stalls"), ("sass_metrics", "gp-sass"),
                     ("perf_metrics", "gp-perf"), ("kernel_perf_metrics", "gp-kperf"),
                     ("scope_perf_metrics", "gp-sperf"), ("capture", "gp-capture"),
                     ("run", "gp-run")):
        v = rep.get(key)
        shown = '<section id="%s">' % sec in dom
        check(shown == (v is not None and v != []), name + ": section %s for %s" % (sec, key))
    # PC sampling's hot source lines per kernel, as the JSON gives them.
    for k in ((rep.get("stalls") or {}).get("kernels") or []):
        for line in k.get("hot_lines") or []:
            if line.get("source_file"):
                want = 'data-key="source_file" data-value="%s"' % attr(line["source_file"])
                check(want in dom and 'data-key="source_line" data-value="%d"'
                      % line["source_line"] in dom, name + ": hot line " + want)
    dur = rep["session"]["duration_ns"]
    if dur is not None:
        check('data-key="duration_ns" data-value="%d"' % dur in dom, name + ": duration")
    return rep, dom, raw


def write_session(root, names, batches, rows_per_batch, streams=4):
    """A session of kernels only: job_start, the names, kernel batches
    (has_details 0: no kernel_detail needed), device metrics, shutdown."""
    d = os.path.join(root, SID)
    os.makedirs(d)
    job = {"version": 1, "type": "job_start", "pid": 4243, "app": "html_test", "session_id": SID,
           "ts_ns": T0, "hostname": "host0",
           "gpu_static_devices": [{"id": 0, "name": "Fake GPU", "uuid": "GPU-0"}],
           "cuda_static_devices": [{"id": 0, "name": "Fake GPU", "uuid": "GPU-0"}],
           "session_kind": "trace", "profiling_engine": "nvidia.trace"}
    cols = ["dt_ns", "kernel_id", "stream_id", "duration_ns", "corr_id", "dyn_shared",
            "num_regs", "has_details", "external_kind", "external_id"]
    with open(os.path.join(d, "device.log"), "w") as f:
        f.write(json.dumps(job) + "\n")
        f.write(json.dumps({"version": 1, "type": "dictionary_update", "session_id": SID,
                            "kernel_dict": {str(i + 1): n for i, n in enumerate(names)}}) + "\n")
        corr = 0
        for b in range(batches):
            base = T0 + 1000000 + b * rows_per_batch * 2000
            rows = []
            for i in range(rows_per_batch):
                corr += 1
                k = corr % len(names)
                rows.append("[%d,%d,%d,%d,%d,0,32,0,0,0]" %
                            (i * 2000, k + 1, 7 + corr % streams, 500 + 300 * k, corr))
            f.write('{"version":1,"type":"kernel_event_batch","session_id":"%s","batch_id":%d,'
                    '"base_time_ns":%d,"columns":%s,"rows":[%s]}\n'
                    % (SID, b + 1, base, json.dumps(cols), ",".join(rows)))
    end = T0 + 1000000 + batches * rows_per_batch * 2000 + 1000000
    dcols = ["dt_ns", "device_id", "gpu_util", "mem_util", "temp_c", "power_mw", "used_mib"]
    samples = [[i * (end - T0) // 20, 0, 40 + i, 10, 50 + i % 7, 150000 + 1000 * i, 1024 + i]
               for i in range(20)]
    with open(os.path.join(d, "system.log"), "w") as f:
        f.write(json.dumps(job) + "\n")
        f.write(json.dumps({"version": 1, "type": "device_metric_batch", "session_id": SID,
                            "batch_id": 1, "base_time_ns": T0, "columns": dcols,
                            "rows": samples}) + "\n")
        f.write(json.dumps({"version": 1, "type": "shutdown", "session_id": SID, "ts_ns": end,
                            "app": "html_test", "pid": 4243}) + "\n")
    with open(os.path.join(d, "scope.log"), "w") as f:
        f.write(json.dumps(job) + "\n")
    return root


ATTR_SID = "5e55a0e1-0000-4000-8000-0000000a7715"
ATTR_MM_STACK = "<module> (/w/train.py:7)|forward (/w/model.py:10)|at::mm|cudaLaunchKernel"
ATTR_RELU_STACK = "<module> (/w/train.py:8)|cuLaunchKernel"


def write_attributed(root):
    """A session whose kernels carry their op (gpufl.torch's kind 4,
    op_dict) and CPU stack (kernel_detail, Python frames): gemm from
    aten::mm at model.py:10, relu with no op at train.py:8."""
    d = os.path.join(root, ATTR_SID)
    os.makedirs(d)
    job = {"version": 1, "type": "job_start", "pid": 4244, "app": "attr", "session_id": ATTR_SID,
           "ts_ns": T0, "hostname": "host0", "session_kind": "trace",
           "profiling_engine": "nvidia.trace"}
    cols = ["dt_ns", "kernel_id", "stream_id", "duration_ns", "corr_id", "has_details",
            "external_kind", "external_id"]
    lines = [job, {"version": 1, "type": "dictionary_update", "session_id": ATTR_SID,
                   "kernel_dict": {"1": "gemm_kernel", "2": "relu_kernel"},
                   "op_dict": {"11": "aten::mm"}}]
    for corr, stack in ((1, ATTR_MM_STACK), (2, ATTR_RELU_STACK)):
        lines.append({"version": 1, "type": "kernel_detail", "session_id": ATTR_SID,
                      "corr_id": corr, "stack_trace": stack})
    lines.append({"version": 1, "type": "kernel_event_batch", "session_id": ATTR_SID,
                  "batch_id": 1, "base_time_ns": T0 + 1000000, "columns": cols,
                  "rows": [[0, 1, 7, 5000, 1, 1, 4, 11], [9000, 2, 7, 2000, 2, 1, 0, 0]]})
    lines.append({"version": 1, "type": "shutdown", "session_id": ATTR_SID, "pid": 4244,
                  "app": "attr", "ts_ns": T0 + 3000000})
    with open(os.path.join(d, "device.log"), "w") as f:
        f.write("".join(json.dumps(x) + "\n" for x in lines))
    return root


def check_attributed(gp, browser, tmp, rep, dom, raw, path):
    """A kernel's op and launching line in the hotspots table and the
    timeline's tooltips; --by line's groups above the kernels."""
    want = {"gemm_kernel": ("aten::mm", "forward (/w/model.py:10)"),
            "relu_kernel": (None, "<module> (/w/train.py:8)")}
    for k in rep["hotspots"]["kernels"]:
        op, line = want[k["name"]]
        check(k.get("op") == op and k.get("line") == line,
              "attributed: JSON kernel %s op %r line %r" % (k["name"], k.get("op"), k.get("line")))
        row = 'data-kernel="%s" data-total-ns="%d" data-count="1" data-op="%s" data-line="%s"' % (
            k["name"], k["total_ns"], attr(op or ""), attr(line))
        check(row in dom, "attributed: hotspot row " + row)
    m = re.search(rb'<script type="application/json" id="gp-timeline">(.*?)</script>', raw, re.S)
    tl = json.loads(m.group(1)) if m else {"tracks": []}
    cells = {c[4]: c for tr in tl["tracks"] for c in tr["cells"]}
    for name, (op, line) in want.items():
        c = cells.get(name)
        check(c is not None and len(c) == 9 and c[7] == op and c[8] == line,
              "attributed: timeline cell of %s: %r" % (name, c))
    page = os.path.join(tmp, "attributed-by-line.html")
    report(gp, path, "html", page, ["--by", "line"])
    dom = dump_dom(browser, tmp, page)
    check("<h3>by line (2 of 2; 2 launches)</h3>" in dom, "attributed: --by line's heading")
    check('data-key="name" data-value="forward (/w/model.py:10)"' in dom,
          "attributed: --by line's group of model.py:10")


def write_run(root, fixture):
    """The fixture session as two ranks of one run (run_id run-7)."""
    src = os.path.join(fixture, "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b")
    for rank in (0, 1):
        sid = "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0%d" % rank
        os.makedirs(os.path.join(root, sid))
        for name in os.listdir(src):
            text = open(os.path.join(src, name)).read()
            text = text.replace("3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b", sid)
            text = text.replace('"pid":4242', '"pid":%d' % (5000 + rank))
            text = text.replace('"type":"job_start",', '"type":"job_start","run_id":"run-7",'
                                '"rank":%d,"world_size":2,' % rank)
            open(os.path.join(root, sid, name), "w").write(text)
    return root


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.exit(__doc__)
    gp, fixtures = os.path.abspath(args[0]), os.path.abspath(args[1])
    browser = chromium()
    if not browser:
        print("SKIP: no chromium (Debian: apt-get install chromium; scripts/install-deps.sh "
              "installs it): the HTML report is not tested in a browser")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="gp_html_")
    try:
        sessions = [("fixture", os.path.join(fixtures, "gpufl-session")),
                    ("gpufl13", os.path.join(fixtures, "gpufl-1.3", "uncompressed-windows"))]
        hostile = write_session(os.path.join(tmp, "hostile"),
                                ["plain_kernel(float*)", HOSTILE, "void k<int>(a&b)"], 2, 50)
        sessions.append(("hostile", hostile))
        sessions.append(("run", write_run(os.path.join(tmp, "run"),
                                          os.path.join(fixtures, "gpufl-session"))))
        sessions.append(("attributed", write_attributed(os.path.join(tmp, "attributed"))))
        if "--screenshots" in args:
            out = os.path.abspath(args[args.index("--screenshots") + 1])
            shots = sessions[:2] + [("large", write_session(
                os.path.join(tmp, "large"), ["kernel_%02d<float>(float*, int)" % i
                                             for i in range(40)], 100, 20000, streams=8))]
            for name, path in shots:
                page = os.path.join(tmp, name + ".html")
                report(gp, path, "html", page)
                subprocess.run([browser] + browser_args(tmp) +
                               ["--screenshot=" + os.path.join(out, "report-%s.png" % name),
                                "--window-size=1400,1800", "file://" + page], timeout=300,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return 0
        if "--large" in args:
            big = write_session(os.path.join(tmp, "large"),
                                ["kernel_%02d<float>(float*, int)" % i for i in range(40)],
                                100, 20000, streams=8)
            rep, dom, raw = check_page(gp, browser, tmp, "large", big)
            check(rep["summary"]["kernel_launches"] == 2000000,
                  "large: 2000000 launches read (%s)" % rep["summary"]["kernel_launches"])
            check(len(raw) < PAGE_LIMIT_BYTES, "large: page of %d bytes < 16 MB" % len(raw))
            print("large: page of %d bytes" % len(raw))
        else:
            for name, path in sessions:
                rep, dom, raw = check_page(gp, browser, tmp, name, path)
                if name == "run":
                    # The per-rank table: a row per process of the run.
                    for p in rep["run"]["processes"]:
                        check('data-key="pid" data-value="%d"' % p["pid"] in dom,
                              "run: rank %s pid %d in the run table" % (p["rank"], p["pid"]))
                    check('id="gp-run"' in dom, "run: the run section")
                if name == "attributed":
                    check_attributed(gp, browser, tmp, rep, dom, raw, path)
                if name == "hostile":
                    check(HOSTILE.encode() not in raw, "hostile: the name never raw in the page")
                    check('<b id="evil"' not in dom, "hostile: no element made of the name")
                    check("pwned" not in dom.split("</title>")[0], "hostile: title untouched")
                    check(html.escape(HOSTILE, quote=False) in dom,
                          "hostile: the name shown as text")
        if FAILS:
            print("%d checks failed" % len(FAILS))
            return 1
        print("ok")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
