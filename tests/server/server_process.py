"""Starts the real pagedchat-server on a free loopback port for a test and stops it after.

The binary comes from $PAGEDCHAT_SERVER (ctest sets it), the model from $PAGEDCHAT_TEST_MODEL.
"""
import os
import re
import subprocess
import resource
import threading
import time
import unittest
import urllib.request


class ServerProcess:
    def __init__(self, *extra_args, wait_loaded=True, via_cli=False, preexec_fn=None):
        server = os.environ.get("PAGEDCHAT_SERVER")
        model = os.environ.get("PAGEDCHAT_TEST_MODEL")
        if not server or not model or not os.path.exists(model):
            raise RuntimeError("set PAGEDCHAT_SERVER and PAGEDCHAT_TEST_MODEL (ctest does)")
        # via_cli: started as users do, `pagedchat-cli serve` (which execs pagedchat-server).
        program = [os.environ["PAGEDCHAT_CLI"], "serve"] if via_cli else [server]
        args = [*program, "--model", model, "--port", "0", *extra_args]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=preexec_fn)
        self.log = []
        self.port = None
        ready = threading.Event()

        def read():  # keeps the pipe drained and remembers the port
            for line in self.proc.stdout:
                self.log.append(line.rstrip())
                m = re.search(r"listening on http://[^:]+:(\d+)", line)
                if m:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60) or self.port is None:
            self.stop()
            raise RuntimeError("the server did not start:\n" + "\n".join(self.log))
        self.url = f"http://127.0.0.1:{self.port}"
        if wait_loaded:
            self.wait_loaded()

    def wait_loaded(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if r.status == 200:
                        return
            except Exception:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError("the server exited:\n" + "\n".join(self.log))
            time.sleep(0.1)
        raise RuntimeError("the model did not load in time")

    def metrics(self, api_key=None):
        req = urllib.request.Request(self.url + "/metrics")
        if api_key:
            req.add_header("Authorization", "Bearer " + api_key)
        with urllib.request.urlopen(req, timeout=10) as r:
            text = r.read().decode()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.split()
                values[name] = float(value)
        return values

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


def rss_mib(pid):
    """The process's resident memory, MiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid):
    """The process's user and system CPU time so far, seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descriptor_limit(n):
    """A preexec_fn: the child gets n descriptors at most."""
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


class ServerTestCase(unittest.TestCase):
    """Test classes whose tests share one server, started with SERVER_ARGS (and a descriptor
    limit of DESCRIPTORS, when set) before the first and stopped after the last."""
    SERVER_ARGS = ()
    DESCRIPTORS = None

    @classmethod
    def setUpClass(cls):
        cls.server = ServerProcess(*cls.SERVER_ARGS, preexec_fn=descriptor_limit(cls.DESCRIPTORS) if cls.DESCRIPTORS else None)

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()


def openai_client(server, **kw):
    """The official client on `server` (no retries: a test sees every failure), and the server's model id."""
    import openai  # only the tests that drive the server through it need it
    client = openai.OpenAI(base_url=server.url + "/v1", api_key=kw.pop("api_key", "unused"), max_retries=0,
                           timeout=kw.pop("timeout", 120), **kw)
    return client, client.models.list().data[0].id
