#!/usr/bin/env python3
"""Stands in for an OpenTelemetry Collector's OTLP/HTTP traces receiver in
the replay: `otlp.py serve PORT FILE` accepts exports on
http://127.0.0.1:PORT/v1/traces (gzip or not), answers as a collector does
and appends each export's protobuf body to FILE; `otlp.py has FILE
TRACE_ID` exits 0 when an export carries the trace id (OTLP encodes it as
its 16 raw bytes). Standard library only."""
import gzip
import http.server
import struct
import sys


def serve(port, path):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404)
            self.end_headers()

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            with open(path, "ab") as f:
                f.write(struct.pack(">I", len(body)) + body)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer(("127.0.0.1", int(port)), Handler).serve_forever()


def has(path, trace_id):
    want = bytes.fromhex(trace_id)
    try:
        data = open(path, "rb").read()
    except FileNotFoundError:
        return False
    i = 0
    while i + 4 <= len(data):
        (n,) = struct.unpack(">I", data[i:i + 4])
        if want in data[i + 4:i + 4 + n]:
            return True
        i += 4 + n
    return False


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "has":
        sys.exit(0 if has(sys.argv[2], sys.argv[3]) else 1)
    else:
        sys.exit(__doc__)
