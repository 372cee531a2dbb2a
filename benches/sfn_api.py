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


def wait_port(port, attempts=600):
    for _ in range(attempts):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


class Client:
    """One keep-alive connection speaking AWS JSON 1.0; `headers` are sent with every call."""

    def __init__(self, port, timeout=600, headers=None):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.headers = headers or {}

    def call(self, op, body):
        try:
            r = self.send(op, body)
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # serve closes a connection left idle (its slow-client timeout): open a new one.
            self.conn.close()
            r = self.send(op, body)
        data = json.loads(r.read() or b"{}")
        if r.status != 200:
            raise RuntimeError(f"{op}: {r.status} {data}")
        return data

    def send(self, op, body):
        self.conn.request("POST", "/", json.dumps(body), {
            "Content-Type": "application/x-amz-json-1.0",
            "X-Amz-Target": f"AWSStepFunctions.{op}",
            **self.headers,
        })
        return self.conn.getresponse()
