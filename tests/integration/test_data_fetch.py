"""`dtrain data fetch` against a local HTTP server on 127.0.0.1 serving the MNIST
files from ../shared/data/mnist: download and verify, resume with a Range
request, servers that ignore Range, wrong checksums, 404s, mirror fallback and
skipping files already there. The t10k files there are the official ones and
verify against the built-in MD5s; the train files are a sample, so tests that
fetch them give their digests with --checksums (the private-mirror option).
Where ../shared is absent (a user's clone) the server has only the in-repo
sample's train files: the tests that stop at the first train file still run,
those that fetch the t10k files skip."""
import functools
import hashlib
import http.server
import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from conftest import SAMPLE_IMAGES, SAMPLE_LABELS, SHARED_MNIST, SOURCE_ROOT, need_shared_mnist

FILES = ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
# The official MD5s (torchvision's MNIST resources), which the catalog holds.
OFFICIAL_MD5 = {"train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
                "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
                "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c"}
TIMEOUT = 60


@functools.lru_cache(maxsize=None)
def fetch_command():
    """`dtrain data fetch` when the CLI has it, else the test build of the same code."""
    dtrain = os.environ.get("DTRAIN_BIN", str(SOURCE_ROOT / "build/cli/dtrain"))
    if Path(dtrain).exists():
        probe = subprocess.run([dtrain, "data", "fetch", "--help"], capture_output=True, text=True, timeout=TIMEOUT)
        if probe.returncode == 0 and "--checksums" in probe.stdout:
            return [dtrain, "data", "fetch"]
    build = Path(os.environ.get("DTRAIN_BUILD_DIR", SOURCE_ROOT / "build"))
    tool = Path(os.environ.get("DTRAIN_FETCH_TOOL", build / "tests/datasets/fetch/dtrain_fetch_tool"))
    if not tool.exists():
        pytest.skip(f"neither `dtrain data fetch` nor {tool} is built")
    return [str(tool)]


def fetch(*args):
    env = dict(os.environ)
    for proxy in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        env.pop(proxy, None)  # traffic goes to 127.0.0.1 only, never through a proxy
    return subprocess.run(fetch_command() + [str(a) for a in args], capture_output=True, text=True,
                          timeout=TIMEOUT, env=env)


def mnist_file(name):
    """The served copy of `name`: ../shared/data/mnist's, else for train-* the in-repo
    sample (byte-identical to ../shared's train files), else None."""
    if (SHARED_MNIST / name).exists():
        return SHARED_MNIST / name
    return {"train-images-idx3-ubyte.gz": SAMPLE_IMAGES, "train-labels-idx1-ubyte.gz": SAMPLE_LABELS}.get(name)


def md5(path):
    return hashlib.md5(Path(path).read_bytes()).hexdigest()


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the server's directory with single "bytes=N-" / "bytes=N-M" ranges
    (206, or 416 past the end) and records (path, Range header, status) per GET."""

    def log_message(self, *args):
        pass

    def do_GET(self):
        path = Path(self.translate_path(self.path))
        rng = self.headers.get("Range")
        if not path.is_file():
            self.server.log.append((self.path, rng, 404))
            self.send_error(404)
            return
        data = path.read_bytes()
        m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng or "")
        if m is None or self.server.ignore_range:
            self.server.log.append((self.path, rng, 200))
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        start = int(m.group(1))
        end = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
        if start >= len(data):
            self.server.log.append((self.path, rng, 416))
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{len(data)}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.server.log.append((self.path, rng, 206))
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        self.send_header("Content-Length", str(end - start + 1))
        self.end_headers()
        self.wfile.write(data[start:end + 1])


@pytest.fixture
def server(tmp_path):
    """A server on a free 127.0.0.1 port serving a copy of ../shared/data/mnist
    (only the sample's train files where ../shared is absent)."""
    root = tmp_path / "www"
    (root / "mnist").mkdir(parents=True)
    for f in FILES:
        if mnist_file(f) is not None:
            shutil.copy(mnist_file(f), root / "mnist" / f)

    def handler(*args, **kwargs):
        return RangeHandler(*args, directory=str(root), **kwargs)

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.log = []
    httpd.ignore_range = False
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def sums(tmp_path):
    """A checksum file giving the sample train files' SHA-256 (t10k keep the official MD5s).
    The tests that take it fetch past the train files, so they need the t10k files."""
    need_shared_mnist()
    path = tmp_path / "SUMS"
    path.write_text("".join(f"{hashlib.sha256((SHARED_MNIST / f).read_bytes()).hexdigest()}  {f}\n"
                            for f in FILES if f.startswith("train")))
    return path


def gets(server, name):
    return [entry for entry in server.log if entry[0].endswith("/" + name)]


def test_fetch_downloads_and_verifies_all_files(server, sums, tmp_path):
    out = tmp_path / "out" / "mnist"
    r = fetch("mnist", out, "--mirror", server.url + "/mnist", "--checksums", sums)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)  # no .part left
    for f in FILES:
        assert (out / f).read_bytes() == (SHARED_MNIST / f).read_bytes()
        assert gets(server, f) == [(f"/mnist/{f}", None, 200)]
    # the t10k files verified against the built-in (official) MD5s
    assert md5(out / "t10k-images-idx3-ubyte.gz") == OFFICIAL_MD5["t10k-images-idx3-ubyte.gz"]
    assert md5(out / "t10k-labels-idx1-ubyte.gz") == OFFICIAL_MD5["t10k-labels-idx1-ubyte.gz"]
    assert "t10k-images-idx3-ubyte.gz: md5 ok" in r.stderr
    assert "train-images-idx3-ubyte.gz: sha256 ok" in r.stderr
    assert re.search(r"t10k-images-idx3-ubyte\.gz: 100% 1\.6 MB / 1\.6 MB  [0-9.]+ [kMG]?B/s", r.stderr), r.stderr
    assert r.stdout == f"mnist: 4 files in {out} (4 downloaded, 0 already there)\n"

    again = fetch("mnist", out, "--mirror", server.url + "/mnist", "--checksums", sums)
    assert again.returncode == 0, again.stderr
    assert len(server.log) == 4  # nothing requested the second time
    assert again.stdout == f"mnist: 4 files in {out} (0 downloaded, 4 already there)\n"
    for f in FILES:
        assert f"{f}: already there" in again.stderr


def test_fetch_resumes_a_partial_download_with_a_range_request(server, sums, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    name = "t10k-images-idx3-ubyte.gz"
    full = (SHARED_MNIST / name).read_bytes()
    half = len(full) // 2
    (out / (name + ".part")).write_bytes(full[:half])
    r = fetch("mnist", out, "--mirror", server.url + "/mnist/", "--checksums", sums)
    assert r.returncode == 0, r.stderr
    assert gets(server, name) == [(f"/mnist/{name}", f"bytes={half}-", 206)]
    assert (out / name).read_bytes() == full
    assert md5(out / name) == OFFICIAL_MD5[name]
    assert not (out / (name + ".part")).exists()
    assert f"{name}: resumed after {half} bytes" in r.stderr


def test_fetch_restarts_when_the_server_ignores_range(server, sums, tmp_path):
    server.ignore_range = True
    out = tmp_path / "out"
    out.mkdir()
    name = "t10k-labels-idx1-ubyte.gz"
    (out / (name + ".part")).write_bytes(b"garbage that must not stay in front")
    r = fetch("mnist", out, "--mirror", server.url + "/mnist", "--checksums", sums)
    assert r.returncode == 0, r.stderr
    # asked for the rest, got the whole file, asked again from byte 0
    assert gets(server, name) == [(f"/mnist/{name}", "bytes=35-", 200), (f"/mnist/{name}", None, 200)]
    assert (out / name).read_bytes() == (SHARED_MNIST / name).read_bytes()
    assert f"{name}: {server.url}/mnist/{name} ignored the range request; downloaded from the start" in r.stderr


def test_fetch_accepts_a_part_that_is_already_complete(server, sums, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    name = "t10k-labels-idx1-ubyte.gz"
    full = (SHARED_MNIST / name).read_bytes()
    (out / (name + ".part")).write_bytes(full)
    r = fetch("mnist", out, "--mirror", server.url + "/mnist", "--checksums", sums)
    assert r.returncode == 0, r.stderr
    assert gets(server, name) == [(f"/mnist/{name}", f"bytes={len(full)}-", 416)]
    assert (out / name).read_bytes() == full


def test_fetch_wrong_checksum_exits_3_and_keeps_no_file(server, tmp_path):
    out = tmp_path / "out"
    # no --checksums: the sample train-images cannot match the official MD5
    r = fetch("mnist", out, "--mirror", server.url + "/mnist", "--quiet")
    assert r.returncode == 3, r.stderr
    name = "train-images-idx3-ubyte.gz"
    assert r.stderr == (f"dtrain: {name}: md5 checksum mismatch: expected {OFFICIAL_MD5[name]}, "
                        f"got {md5(mnist_file(name))} (from {server.url}/mnist/{name}); "
                        f"deleted {out / (name + '.part')}\n")
    assert list(out.iterdir()) == []


def test_fetch_404_names_the_url_and_exits_1(server, tmp_path):
    out = tmp_path / "out"
    r = fetch("mnist", out, "--mirror", server.url + "/missing", "--quiet")
    assert r.returncode == 1, r.stderr
    url = f"{server.url}/missing/train-images-idx3-ubyte.gz"
    assert r.stderr == (f"dtrain: train-images-idx3-ubyte.gz: download failed from every mirror: "
                        f"GET {url}: HTTP 404\n")
    assert list(out.iterdir()) == []


def test_fetch_falls_back_to_the_next_mirror(server, sums, tmp_path):
    out = tmp_path / "out"
    r = fetch("mnist", out, "--mirror", server.url + "/missing", "--mirror", server.url + "/mnist",
              "--checksums", sums)
    assert r.returncode == 0, r.stderr
    for f in FILES:
        assert [status for _, _, status in gets(server, f)] == [404, 200]
        assert (out / f).read_bytes() == (SHARED_MNIST / f).read_bytes()
    assert (f"GET {server.url}/missing/t10k-labels-idx1-ubyte.gz: HTTP 404; trying the next mirror"
            in r.stderr)


def test_fetch_quiet_prints_nothing_on_success(server, sums, tmp_path):
    r = fetch("mnist", tmp_path / "out", "--mirror", server.url + "/mnist", "--checksums", sums, "-q")
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and r.stderr == ""


def test_fetch_usage_errors_exit_2(server, tmp_path):
    r = fetch("cifar10", tmp_path / "out", "--mirror", server.url + "/mnist")
    assert r.returncode == 2
    assert r.stderr == 'dtrain: unknown dataset "cifar10" (known: mnist, fashion_mnist)\n'
    bad = tmp_path / "BAD"
    bad.write_text("not a checksum line\n")
    r = fetch("mnist", tmp_path / "out", "--mirror", server.url + "/mnist", "--checksums", bad)
    assert r.returncode == 2
    assert r.stderr == (f'dtrain: {bad}:1: expected "<md5 or sha256 hex digest>  <file name>", '
                        f'got "not a checksum line"\n')
    assert server.log == []
