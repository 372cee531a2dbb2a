"""What the serve benchmarks share: a free port, waiting for a server to listen, and a
keep-alive client speaking AWS JSON 1.0 (no SDK: its own cost would blur the figures)."""
import http.client
import json
import socket
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port):
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


class Client:
    """One keep-alive connection speaking AWS JSON 1.0."""

    def __init__(self, port, timeout=600):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)

    def call(self, op, body):
        self.conn.request("POST", "/", json.dumps(body), {
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": f"AWSStepFunctions.{op}",
        })
        r = self.conn.getresponse()
        data = json.loads(r.read() or b"{}")
        if r.status != 200:
            raise RuntimeError(f"{op}: {r.status} {data}")
        return data
