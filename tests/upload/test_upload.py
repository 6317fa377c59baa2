"""Upload through the gpu-profile command and the Python API (gpufl.upload_logs,
gpufl.session, the remote_upload shim) against tests/upload/server.py, a
GPUFlight backend on 127.0.0.1 that records what it received.  Also: TLS
verification is on (a self-signed loopback server is refused; skipped,
saying so, without openssl), the kill switch makes no connection, and the
API key shows up in no output, file, process listing or child environment.
Run through CTest (test_upload_py), which sets GPU_PROFILE_LIBRARY,
PYTHONPATH, GP_TEST_CLI and the test doubles' environment.
"""

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))

import gpufl  # noqa: E402

CLI = os.environ.get("GP_TEST_CLI", "")
KEY = "gpfl_pytestkey_7c1d"
SID = "0b7e3c1a-1111-4222-8333-444455556666"


class Server:
    def __init__(self, tmp, *args):
        self.dir = tempfile.mkdtemp(prefix="srv-", dir=tmp)
        self.log = os.path.join(self.dir, "requests.log")
        port_file = os.path.join(self.dir, "port")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "server.py"),
                                      port_file, self.log] + list(args))
        for _ in range(200):
            if os.path.exists(port_file):
                break
            time.sleep(0.05)
        with open(port_file) as f:
            self.port = int(f.read())
        scheme = "https" if "--tls" in args else "http"
        self.url = "%s://127.0.0.1:%d" % (scheme, self.port)

    def requests(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line) for line in f]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def make_session(root, n=3, finished=True, sid=SID):
    d = os.path.join(root, sid)
    os.makedirs(d, exist_ok=True)
    for ch in ("device", "scope", "system"):
        lines = [json.dumps({"version": 1, "type": "job_start", "session_id": sid,
                             "hostname": "hostpy", "ch": ch})]
        lines += [json.dumps({"type": "test_event", "session_id": sid, "ch": ch, "i": i})
                  for i in range(n)]
        if finished:
            lines.append(json.dumps({"type": "shutdown", "session_id": sid, "ch": ch}))
        with open(os.path.join(d, ch + ".log"), "w") as f:
            f.write("\n".join(lines) + "\n")
    return d


def session_lines(d):
    out = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".log"):
            with open(os.path.join(d, name)) as f:
                out += f.read().splitlines()
    return out


def sent_lines(reqs):
    return [l for r in reqs if r["status"] == 200 for l in r["lines"]]


def tree_has(root, needle):
    for dirpath, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as f:
                data = f.read()
            if needle.encode() in data:
                return os.path.join(dirpath, name)
            if name.endswith(".gz") and needle.encode() in gzip.decompress(data):
                return os.path.join(dirpath, name)
    return None


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gp-upload-py-")
        self.old_env = dict(os.environ)
        for k in list(os.environ):
            if k.startswith("GPUFL_"):
                del os.environ[k]
        self.servers = []
        self.logs = os.path.join(self.tmp, "logs")
        os.makedirs(self.logs)

    def tearDown(self):
        for s in self.servers:
            s.stop()
        # The key in no file of the logs (the server's own log holds what it was sent).
        self.assertIsNone(tree_has(self.logs, KEY))
        os.environ.clear()
        os.environ.update(self.old_env)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def server(self, *args):
        s = Server(self.tmp, *args)
        self.servers.append(s)
        return s

    def cli(self, *args, env=None):
        p = subprocess.run([CLI, "upload"] + list(args), capture_output=True, text=True,
                           env=env, timeout=60)
        self.assertNotIn(KEY, p.stdout + p.stderr)
        return p


@unittest.skipUnless(CLI, "GP_TEST_CLI not set")
class Cli(Base):
    def test_upload_and_rerun(self):
        s = self.server()
        d = make_session(self.logs)
        p = self.cli("--backend-url", s.url, "--api-key", KEY, self.logs)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "")
        self.assertIn("upload: uploaded 15 events", p.stderr)
        self.assertIn("0 of 3 files already sent before", p.stderr)
        reqs = s.requests()
        self.assertEqual([r["path"] for r in reqs], ["/api/v1/events/stream"] * 3 +
                         ["/api/v1/events/session-complete"])
        self.assertEqual(sorted(sent_lines(reqs)), sorted(session_lines(d)))
        for r in reqs:
            self.assertEqual(r["headers"]["authorization"], "Bearer " + KEY)
            self.assertEqual(r["headers"]["x-gpuflight-session-id"], SID)
        # From the environment this time; nothing left to send.
        env = dict(os.environ, GPUFL_BACKEND_URL=s.url, GPUFL_API_KEY=KEY)
        p = self.cli(self.logs, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("uploaded 0 events", p.stderr)
        self.assertIn("3 of 3 files already sent before", p.stderr)
        self.assertEqual(len(s.requests()), 4)

    def test_failures_and_statuses(self):
        make_session(self.logs)
        for status, words in ((401, "the API key was refused"), (403, "the API key was refused"),
                              (404, "the backend is too old"), (413, "HTTP 413"),
                              (503, "the backend is failing")):
            s = self.server("--status", str(status))
            p = self.cli("--backend-url", s.url, "--api-key", KEY, "--retries", "0",
                         self.logs)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("answered HTTP %d" % status, p.stderr)
            self.assertIn(words, p.stderr)
            self.assertIn(s.url + "/api/v1/events/stream", p.stderr)
        # Nothing reachable: exit 1, the URL named.
        p = self.cli("--backend-url", "http://127.0.0.1:9", "--api-key", KEY, "--retries", "0",
                     "--timeout", "5", self.logs)
        self.assertEqual(p.returncode, 1)
        self.assertIn("POST http://127.0.0.1:9/api/v1/events/stream failed 1 time(s)", p.stderr)

    def test_resume_after_5xx(self):
        d = make_session(self.logs, n=10)
        bad = self.server("--fail-after", "2")
        p = self.cli("--backend-url", bad.url, "--api-key", KEY, "--retries", "0", self.logs)
        self.assertEqual(p.returncode, 1)
        self.assertIn("system.log", p.stderr)
        bad.stop()
        good = self.server("--port", str(bad.port))  # the same backend, now sound
        p = self.cli("--backend-url", good.url, "--api-key", KEY, self.logs)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("2 of 3 files already sent before", p.stderr)
        both = sent_lines(bad.requests()) + sent_lines(good.requests())
        self.assertEqual(sorted(both), sorted(session_lines(d)))  # each exactly once
        # Another backend: the cursor is per backend, so it gets everything.
        other = self.server()
        p = self.cli("--backend-url", other.url, "--api-key", KEY, self.logs)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("0 of 3 files already sent before", p.stderr)
        self.assertEqual(sorted(sent_lines(other.requests())), sorted(session_lines(d)))

    def test_usage_errors(self):
        for args in ([], ["a", "b"], ["--bogus", "x"], ["--timeout", "zero", "x"],
                     ["--retries", "1.5", "x"], ["--backend-url"]):
            p = self.cli(*args)
            self.assertEqual(p.returncode, 125, (args, p.stderr))
            self.assertIn("upload:", p.stderr)
        p = self.cli("--api-key", KEY, self.logs)  # no backend URL
        self.assertEqual(p.returncode, 125)
        self.assertIn("GPUFL_BACKEND_URL", p.stderr)
        p = self.cli("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("usage: gpu-profile upload", p.stdout)

    def test_unfinished_needs_force(self):
        make_session(self.logs, finished=False)
        s = self.server()
        p = self.cli("--backend-url", s.url, "--api-key", KEY, self.logs)
        self.assertEqual(p.returncode, 1)
        self.assertIn("not finished", p.stderr)
        self.assertEqual(s.requests(), [])
        p = self.cli("--backend-url", s.url, "--api-key", KEY, "--force", self.logs)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(s.requests()), 4)

    def test_kill_switch_no_connection(self):
        make_session(self.logs)
        s = self.server()
        env = dict(os.environ, GPUFL_DISABLED="1")
        p = self.cli("--backend-url", s.url, "--api-key", KEY, self.logs, env=env)
        self.assertEqual(p.returncode, 0)
        self.assertIn("GPUFL_DISABLED=1: upload skipped", p.stderr)
        self.assertFalse(os.path.exists(s.log))  # no request reached it

    def test_key_not_in_process_listing(self):
        make_session(self.logs)
        s = self.server("--status", "503")
        p = subprocess.Popen([CLI, "upload", "--backend-url", s.url, "--api-key=" + KEY,
                              "--retries", "2", self.logs], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(0.6)  # in its retries (0.5 s, then 1 s)
        with open("/proc/%d/cmdline" % p.pid, "rb") as f:
            cmdline = f.read()
        out, err = p.communicate(timeout=30)
        self.assertNotIn(KEY.encode(), cmdline)
        self.assertIn(b"--api-key=", cmdline)
        self.assertNotIn(KEY, out + err)
        self.assertEqual(p.returncode, 1)

    def test_run_form_adds_no_key(self):
        # gpu-profile -- CMD passes the user's environment through; it never adds a key.
        env = dict(os.environ)
        env.pop("GPUFL_API_KEY", None)
        p = subprocess.run([os.path.abspath(CLI), "--", "env"], capture_output=True,
                           text=True, env=env, timeout=60, cwd=self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("GPUFL_API_KEY", p.stdout)
        self.assertNotIn(KEY, p.stdout + p.stderr)

    def test_tls_verification_on(self):
        if not shutil.which("openssl"):
            self.skipTest("no openssl: the self-signed certificate cannot be made")
        cert, key = os.path.join(self.tmp, "c.pem"), os.path.join(self.tmp, "k.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1"],
                       check=True, capture_output=True)
        make_session(self.logs)
        s = self.server("--tls", cert, key)
        p = self.cli("--backend-url", s.url, "--api-key", KEY, "--retries", "0", self.logs)
        self.assertEqual(p.returncode, 1)
        self.assertIn("TLS certificate verification failed", p.stderr)
        self.assertEqual(s.requests(), [])


class Python(Base):
    def test_upload_logs(self):
        s = self.server()
        d = make_session(self.logs)
        r = gpufl.upload_logs(log_path=self.logs, backend_url=s.url, api_key=KEY,
                              retry_delay_ms=0)
        self.assertTrue(r.success, r.message)
        self.assertEqual((r.events_uploaded, r.files_processed, r.files_skipped_by_cursor,
                          r.sessions_uploaded, r.http_status, r.status),
                         (15, 3, 0, 1, None, "GPUFL_OK"))
        self.assertEqual(r.bytes_uploaded, sum(os.path.getsize(os.path.join(d, n))
                                               for n in os.listdir(d) if n.endswith(".log")))
        self.assertNotIn(KEY, repr(r) + r.message)
        s2 = self.server("--status", "401")
        os.remove(os.path.join(d, ".gpufl-upload-cursor.json"))
        r = gpufl.upload_logs(self.logs, s2.url, KEY)
        self.assertFalse(r.success)
        self.assertEqual((r.http_status, r.status), (401, "GPUFL_ERR_UPLOAD"))
        self.assertIn("API key was refused", r.message)
        self.assertNotIn(KEY, r.message)
        with self.assertRaises(TypeError):
            gpufl.upload_logs(self.logs, s.url, KEY, force="yes")

    def test_kill_switch(self):
        s = self.server()
        make_session(self.logs)
        os.environ["GPUFL_DISABLED"] = "true"
        r = gpufl.upload_logs(self.logs, s.url, KEY)
        self.assertEqual((r.success, r.events_uploaded, r.status), (True, 0, "GPUFL_DISABLED"))
        del os.environ["GPUFL_DISABLED"]
        self.assertFalse(gpufl.init(log_path=self.logs, enabled=False))
        r = gpufl.upload_logs(self.logs, s.url, KEY)
        self.assertEqual((r.success, r.events_uploaded), (True, 0))
        with gpufl.recording(log_path=self.logs, enabled=False, backend_url=s.url,
                             api_key=KEY) as h:
            self.assertFalse(h.started)
        self.assertTrue(h.upload_result.success)
        self.assertEqual(h.upload_result.events_uploaded, 0)
        with gpufl.session(log_path=self.logs, enabled=False, backend_url=s.url,
                           api_key=KEY) as ok:
            self.assertIs(ok, False)  # GPUFlight's: init's answer
        self.assertFalse(os.path.exists(s.log))  # no connection at all

    def test_session_uploads_even_when_the_block_raises(self):
        s = self.server()
        with self.assertRaises(ZeroDivisionError):
            with gpufl.recording(app_name="up", log_path=self.logs, backend="None",
                                 backend_url=s.url, api_key=KEY) as h:
                self.assertTrue(h.started)
                with gpufl.Scope("work"):
                    pass
                1 / 0
        self.assertTrue(h.upload_result.success, h.upload_result.message)
        reqs = s.requests()
        self.assertEqual(reqs[-1]["path"], "/api/v1/events/session-complete")
        self.assertEqual(sorted(sent_lines(reqs)), sorted(session_lines(h.session_dir)))
        self.assertEqual(h.upload_result.events_uploaded, len(session_lines(h.session_dir)))

    def test_remote_upload_removed(self):
        # The seed's v1.1 shim ended in v1.2 (GPUFlight 1.3 raises too): no
        # session, nothing sent, and the key in no message.
        s = self.server()
        with self.assertRaisesRegex(TypeError, r"init\(remote_upload=True\) was removed in "
                                               r"v1\.2: upload after the session ends") as cm:
            gpufl.init(app_name="shim", log_path=self.logs, backend="None", remote_upload=True,
                       backend_url=s.url, api_key=KEY)
        self.assertNotIn(KEY, str(cm.exception))
        self.assertFalse(gpufl.is_active())
        self.assertEqual(os.listdir(self.logs) if os.path.exists(self.logs) else [], [])
        self.assertFalse(os.path.exists(s.log))  # no connection at all


if __name__ == "__main__":
    unittest.main()
