"""The tests' one local HTTP server (conftest's `http_server` fixture; test scaffolding, not a
stage): serves bytes put on it and files written to its folder, on 127.0.0.1, and records what
it was asked and what it sent.

- put(name, data, **faults) / routes[path] = Route(...): a body (put writes it to the folder
  too), with the faults a download must survive: statuses answered before the body
  (fail_first), a first response cut at half its Content-Length (truncate_first), Range
  requests ignored (honor_range=False).
- root: a file written there is served as /name (a 404 where neither exists).
- requests: (path, Range header) of every GET; hits[path]: their count per path;
  bytes_served[path]: the body bytes sent, written in small chunks through a small send
  buffer, so that the count stops soon after a client that read what it needed closes.
- put_hub_dataset(repo, revision, files): a Hugging Face Hub dataset repository at one
  commit, as huggingface_hub (HF_ENDPOINT=server.base) reads it: the tree listing
  (/api/datasets/REPO/tree/REV, one page) and each file at /datasets/REPO/resolve/REV/PATH,
  answering HEAD and GET with the Hub's headers (X-Repo-Commit; for a file in LFS, as every
  parquet file is, X-Linked-Etag = its sha256 and X-Linked-Size; else ETag = its git blob
  sha1). The query string is not part of a route's name.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Route:
    body: bytes
    fail_first: list[int] = field(default_factory=list)  # statuses answered before the body
    truncate_first: bool = False  # first body response: full Content-Length, half the bytes
    honor_range: bool = True
    headers: dict = field(default_factory=dict)  # sent with the body and answered to HEAD


class LocalServer:
    """A context manager: started on enter, stopped on exit."""

    def __init__(self, root):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.routes: dict[str, Route] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.hits: Counter = Counter()
        self.bytes_served: Counter = Counter()
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.owner = self

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_port}"

    def url(self, name: str) -> str:
        return f"{self.base}/{name.lstrip('/')}"

    def put(self, name: str, data: bytes, **faults) -> str:
        """Serve `data` as /name (with Route's faults), written to the folder too; returns its
        URL."""
        (self.root / name.lstrip("/")).write_bytes(data)
        self.routes["/" + name.lstrip("/")] = Route(data, **faults)
        return self.url(name)

    def put_hub_dataset(self, repo: str, revision: str, files: dict[str, bytes], *,
                        lfs=lambda path: path.endswith(".parquet")) -> dict[str, Route]:
        """Serve `files` {path in the repo: bytes} as the dataset `repo` at commit `revision`;
        returns each file's Route by its path in the repo (to add faults or change a header)."""
        tree, routes = [], {}
        for path, data in sorted(files.items()):
            entry = {"type": "file", "path": path, "size": len(data), "oid": git_blob_sha1(data)}
            headers = {"X-Repo-Commit": revision}
            if lfs(path):
                sha = hashlib.sha256(data).hexdigest()
                entry["lfs"] = {"oid": sha, "size": len(data), "pointerSize": 134}
                headers |= {"X-Linked-Etag": f'"{sha}"', "X-Linked-Size": str(len(data)),
                            "ETag": f'"{entry["oid"]}"'}
            else:
                headers["ETag"] = f'"{entry["oid"]}"'
            tree.append(entry)
            routes[path] = Route(data, headers=headers)
            self.routes[f"/datasets/{repo}/resolve/{revision}/{path}"] = routes[path]
        self.routes[f"/api/datasets/{repo}/tree/{revision}"] = Route(
            json.dumps(tree).encode(), headers={"Content-Type": "application/json"})
        return routes

    def ranges(self, path: str) -> list[str | None]:
        return [r for p, r in self.requests if p == path]

    def _route(self, path: str) -> Route | None:
        path = path.split("?")[0]
        if path in self.routes:
            return self.routes[path]
        file = self.root / path.lstrip("/")
        return Route(file.read_bytes()) if file.is_file() else None

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: closing = end of body
    CHUNK = 16 << 10

    def log_message(self, *args):  # keep pytest output quiet
        pass

    def setup(self):
        super().setup()
        # A small send buffer: the count stops near what the client read before closing.
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 << 10)

    def do_HEAD(self):
        """The headers a GET would send, no body; faults are left to the GET."""
        srv: LocalServer = self.server.owner
        with srv.lock:
            route = srv._route(self.path)
        if route is None:
            return self.send_error(404)
        self.send_response(200)
        for k, v in route.headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(route.body)))
        self.end_headers()

    def do_GET(self):
        srv: LocalServer = self.server.owner
        rng = self.headers.get("Range")
        with srv.lock:
            srv.requests.append((self.path, rng))
            srv.hits[self.path] += 1
            route = srv._route(self.path)
            status = route.fail_first.pop(0) if route and route.fail_first else None
            truncate = bool(route and route.truncate_first)
            if truncate:
                route.truncate_first = False
        if route is None:
            return self.send_error(404)
        if status is not None:
            return self.send_error(status)
        body, start = route.body, 0
        if rng and route.honor_range:
            start = int(rng.removeprefix("bytes=").split("-")[0])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                return self.end_headers()
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        payload = body[start:]
        for k, v in route.headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self._send(srv, payload[: len(payload) // 2] if truncate else payload)

    def _send(self, srv: LocalServer, payload: bytes) -> None:
        try:
            for i in range(0, len(payload), self.CHUNK):
                chunk = payload[i:i + self.CHUNK]
                self.wfile.write(chunk)
                self.wfile.flush()
                with srv.lock:
                    srv.bytes_served[self.path] += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client closed the connection: it read what it needed


def git_blob_sha1(data: bytes) -> str:
    """The id git gives a file's content (`git hash-object`): the Hub's oid of a file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
