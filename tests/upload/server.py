"""A GPUFlight backend for the upload tests: the protocol of
shared/spec/session-log-format.md ("Upload protocol") on 127.0.0.1, a
random port, Python's standard library only.

It records every request it receives, one JSON object per line in LOG
(method, path, headers, the gunzipped body's lines), and answers
{"accepted": N, "rejected": 0, "errors": []}.  Faults on demand:

  --status S          answer every request with HTTP S
  --fail-after N      answer HTTP --fail-status (503) from the (N+1)-th request on
  --drop-after N      from the (N+1)-th request on, close the connection unanswered
  --tls CERT KEY      speak https with that certificate
  --port P            listen on port P (default: a free one), e.g. the port
                      of a server stopped before, to be the same backend again

Usage: server.py PORT_FILE LOG [options]; the port is written to
PORT_FILE once the server listens.  Runs until killed.
"""

import argparse
import gzip
import http.server
import json
import os
import socket
import ssl
import sys
import threading


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port_file")
    ap.add_argument("log")
    ap.add_argument("--status", type=int, default=0)
    ap.add_argument("--fail-after", type=int, default=-1)
    ap.add_argument("--fail-status", type=int, default=503)
    ap.add_argument("--drop-after", type=int, default=-1)
    ap.add_argument("--tls", nargs=2)
    ap.add_argument("--port", type=int, default=0)
    a = ap.parse_args()
    lock = threading.Lock()
    count = [0]

    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_POST(self):
            n = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(n) if n else b""
            with lock:
                count[0] += 1
                k = count[0]
            if a.drop_after >= 0 and k > a.drop_after:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            rec = {"n": k, "method": "POST", "path": self.path,
                   "headers": {h.lower(): v for h, v in self.headers.items()}}
            lines = []
            if raw:
                try:
                    body = gzip.decompress(raw) if self.headers.get(
                        "Content-Encoding") == "gzip" else raw
                    lines = body.decode("utf-8").splitlines()
                except Exception as e:  # recorded: the test fails on it
                    rec["body_error"] = str(e)
            rec["lines"] = lines
            status = a.status or (a.fail_status if 0 <= a.fail_after < k else 200)
            rec["status"] = status
            with lock, open(a.log, "a") as f:
                f.write(json.dumps(rec) + "\n")
            out = json.dumps({"accepted": len(lines), "rejected": 0, "errors": []}).encode()
            if status >= 400:
                out = json.dumps({"error": "status %d" % status}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", a.port), H)
    if a.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(a.tls[0], a.tls[1])
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, a.port_file)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
