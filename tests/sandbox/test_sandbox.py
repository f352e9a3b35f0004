"""The sandbox does its job for honest code: per-test results and failure reasons, time and
memory limits with the reason reported, no network, an environment of its own. (The attacks
are in test_attacks.py.)"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillgrad.errors import ConfigError
from skillgrad.sandbox import Limits, run_code, run_in_box, run_tests

pytestmark = pytest.mark.slow

ADD = "def add(a, b):\n    return a + b\n"


class Listener:
    """A TCP server on 127.0.0.1 that records every connection it accepts."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def test_assert_tests_are_reported_one_by_one() -> None:
    tests = "assert add(1, 2) == 3\nassert add(2, 2) == 5\nassert add(0, 0) == 0\n"
    result = run_tests(ADD, tests, timeout_s=10, memory_mb=256)
    assert (result.tests_passed, result.tests_total) == (2, 3)
    assert not result.passed
    assert [t["passed"] for t in result.tests] == [True, False, True]
    assert result.tests[1]["error"] == "got 4, expected 5"
    assert "assert add(2, 2) == 5: got 4, expected 5" in result.summary()


def test_humaneval_check_style_and_entry_point() -> None:
    code = "def helper(x):\n    return x\n\ndef add(a, b):\n    return helper(a) + b\n"
    tests = (
        "def check(candidate):\n    assert candidate(1, 1) == 2\n    assert candidate(2, 3) == 5\n"
    )
    result = run_tests(code, tests, timeout_s=10, memory_mb=256, entry_point="add")
    assert result.passed and (result.tests_passed, result.tests_total) == (2, 2)
    # without entry_point the last defined function is the candidate
    assert run_tests(code, tests, timeout_s=10, memory_mb=256).passed


def test_syntax_error_and_exception_are_reported() -> None:
    bad = run_tests("def add(a, b:\n    return a\n", "assert add(1, 2) == 3\n", 10, 256)
    assert not bad.passed and bad.tests_total == 1 and bad.tests_passed == 0
    assert "SyntaxError" in bad.errors[0]
    raising = run_tests("def add(a, b):\n    return a / 0\n", "assert add(1, 2) == 3\n", 10, 256)
    assert "ZeroDivisionError" in raising.tests[0]["error"]
    assert 'solution.py", line 2' in raising.tests[0]["error"]


def test_network_is_unreachable(listener: Listener) -> None:
    code = (
        "import socket\n"
        "def reach():\n"
        f"    s = socket.create_connection(('127.0.0.1', {listener.port}), timeout=2)\n"
        "    return True\n"
        "def reach_raw():\n"
        "    import _socket\n"
        "    s = _socket.socket()\n"
        f"    s.connect(('10.255.255.1', {listener.port}))\n"
        "    return True\n"
    )
    result = run_tests(code, "assert reach()\nassert reach_raw()\n", timeout_s=10, memory_mb=256)
    assert result.tests_passed == 0 and result.tests_total == 2
    assert "Connection refused" in result.tests[0]["error"]
    assert "Network is unreachable" in result.tests[1]["error"]
    assert listener.accepted == 0
    assert result.isolation.startswith("bubblewrap+no-network")


def test_writes_stay_in_the_private_work_directory(tmp_path: Path) -> None:
    code = (
        "import os\n"
        "def inside():\n"
        "    with open('scratch.txt', 'w') as fh:\n"
        "        fh.write('ok')\n"
        "    return open('scratch.txt').read(), os.getcwd()\n"
        "def outside(path):\n"
        "    try:\n"
        "        open(path, 'w').write('x')\n"
        "        return 'wrote'\n"
        "    except OSError as exc:\n"
        "        return exc.strerror\n"
    )
    tests = (
        "assert inside() == ('ok', '/work')\n"
        "assert outside('/usr/escaped.txt') == 'Read-only file system'\n"
        f"assert outside({str(tmp_path / 'escaped.txt')!r}) == 'No such file or directory'\n"
    )
    result = run_tests(code, tests, timeout_s=10, memory_mb=256)
    assert result.passed, result.summary()
    assert not (tmp_path / "escaped.txt").exists() and not Path("/usr/escaped.txt").exists()


def test_killed_at_time_limit_with_reason() -> None:
    code = "def slow(x):\n    while True:\n        pass\n"
    tests = "assert 1 + 1 == 2\nassert slow(1) == 1\n"
    result = run_tests(code, tests, timeout_s=3, memory_mb=256)
    assert result.timed_out and not result.passed
    assert "time limit of 3s exceeded" in result.killed_reason
    assert result.duration_s < 8
    # the test that finished before the kill is still counted
    assert (result.tests_passed, result.tests_total) == (1, 2)
    assert "stopped: time limit" in result.summary()


def test_sleeping_code_is_killed_at_wall_clock_limit() -> None:
    result = run_code("import time\ntime.sleep(60)\n", timeout_s=1, memory_mb=256)
    assert result.timed_out and result.duration_s < 8


@pytest.mark.parametrize(
    "code",
    [
        "buf = bytearray(2 * 1024 ** 3)\n",
        "chunks = []\nwhile True:\n    chunks.append(b'x' * 10**6)\n",
    ],
)
def test_killed_at_memory_limit_with_reason(code: str) -> None:
    result = run_code(code, timeout_s=20, memory_mb=128)
    assert result.memory_exceeded and not result.passed
    assert "memory limit of 128 MB exceeded" in result.killed_reason
    assert not result.timed_out


def test_environment_is_scrubbed_and_workdir_is_private(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    code = "import os\nprint(sorted(os.environ))\nprint(os.getcwd(), os.listdir('.'))\n"
    result = run_code(code, timeout_s=10, memory_mb=256)
    assert result.passed, result.summary()
    names, cwd = result.stdout.splitlines()
    assert "sk-secret-value" not in result.stdout
    assert set(eval(names)) <= {"HOME", "LANG", "PATH", "TMPDIR", "PWD", "LC_CTYPE"}
    assert cwd == "/work []"


def test_output_is_truncated_and_results_survive_flooding() -> None:
    code = "def f():\n    return 1\nprint('y' * 200_000)\n"
    result = run_tests(code, "assert f() == 1\n", timeout_s=10, memory_mb=256)
    assert result.passed
    assert len(result.stdout) < 10_000 and "\n...[192001 bytes cut]...\n" in result.stdout


def test_bad_limits_and_modes_are_rejected_clearly() -> None:
    with pytest.raises(ConfigError, match="timeout_s must be > 0"):
        run_code("pass", timeout_s=0, memory_mb=256)
    with pytest.raises(ConfigError, match="memory_mb must be >="):
        run_code("pass", timeout_s=1, memory_mb=1)
    with pytest.raises(ConfigError, match=r"unknown mode 'none'.*bubblewrap, unsandboxed"):
        run_code("pass", mode="none")


def test_network_modules_still_import() -> None:
    # ssl and http.client subclass socket.socket at import time: the guard must not break them
    code = "import ssl, http.client, urllib.request, json\n\ndef f():\n    return json.dumps([1])\n"
    result = run_tests(code, "assert f() == '[1]'\n", timeout_s=10, memory_mb=256)
    assert result.passed, result.summary()


def test_values_of_every_builtin_kind_cross_and_objects_are_remote() -> None:
    code = (
        "import math\n"
        "def values():\n"
        "    return [1, 2**80, -0.5, math.inf, 1+2j, 'é', b'\\x00', (1,), {2}, frozenset({3}),\n"
        "            {'k': [None, True]}]\n"
        "class Counter:\n"
        "    def __init__(self, n):\n"
        "        self.n = n\n"
        "    def up(self):\n"
        "        self.n += 1\n"
        "        return self.n\n"
        "    def __iter__(self):\n"
        "        return iter(range(self.n))\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "def big():\n"
        "    return 3 ** 20000\n"
        "def boom():\n"
        "    raise ValueError('bad input')\n"
    )
    tests = (
        "import math\n"
        "assert values() == [1, 2**80, -0.5, math.inf, 1+2j, 'é', b'\\x00', (1,), {2},\n"
        "                    frozenset({3}), {'k': [None, True]}]\n"
        "assert big() == 3 ** 20000\n"
        "c = Counter(2)\n"
        "assert c.up() == 3 and list(c) == [0, 1, 2] and c.n == 3\n"
        "assert c == c and c != None\n"
        "def test_raises():\n"
        "    try:\n"
        "        boom()\n"
        "    except ValueError as exc:\n"
        "        assert 'bad input' in str(exc)\n"
        "    else:\n"
        "        raise AssertionError('no ValueError')\n"
        "from solution import values as v\n"
        "assert v()[0] == 1\n"
    )
    result = run_tests(code, tests, timeout_s=10, memory_mb=256)
    assert result.passed, result.summary()
    truthy = run_tests(
        "class T:\n    def __bool__(self):\n        return True\ndef f():\n    return T()\n",
        "assert f()\n",
    )
    assert not truthy.passed and "no truth value" in truthy.tests[0]["error"]


def test_solution_objects_compare_by_value_or_not_at_all() -> None:
    """A builtin type's subclass crosses as its value (compared as Python would, its own
    ``__eq__`` never asked); any other object cannot be compared, so ``assert f(x) != y``
    no longer passes for every solution object (issue 16)."""
    code = (
        "import collections, enum\n"
        "Point = collections.namedtuple('Point', 'x y')\n"
        "class Color(str, enum.Enum):\n    RED = 'red'\n"
        "class Level(enum.IntEnum):\n    HIGH = 3\n"
        "class Liar(int):\n    def __eq__(self, other):\n        return True\n"
        "    __hash__ = int.__hash__\n"
        "class Box:\n    pass\n"
        "def point():\n    return Point(1, 2)\n"
        "def color():\n    return Color.RED\n"
        "def level():\n    return Level.HIGH\n"
        "def counts():\n    return collections.Counter('aab')\n"
        "def liar():\n    return Liar(1)\n"
        "def box():\n    return Box()\n"
    )
    tests = (
        "assert point() == (1, 2)\n"
        "assert color() == 'red'\n"
        "assert level() == 3\n"
        "assert counts() == {'a': 2, 'b': 1}\n"
        "assert liar() != 2\n"
        "assert liar() == 2\n"
        "assert box() != 5\n"
        "assert box() == 5\n"
        "assert box() is not None and box() != None\n"
    )
    result = run_tests(code, tests, timeout_s=10, memory_mb=256)
    passed = [t["passed"] for t in result.tests]
    assert passed == [True, True, True, True, True, False, False, False, True], result.summary()
    assert "cannot compare it with int values" in result.tests[6]["error"]


def test_unsandboxed_mode_is_opt_in_by_name_and_recorded() -> None:
    result = run_tests(ADD, "assert add(1, 2) == 3\n", mode="unsandboxed")
    assert result.passed and result.isolation == "unsandboxed+separate-judge"
    plain = run_in_box(
        ["/bin/sh", "-c", "echo $HOME"], limits=Limits(timeout_s=5), mode="unsandboxed"
    )
    assert plain.returncode == 0 and plain.isolation == "unsandboxed"


def test_a_command_box_with_a_host_work_directory() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _command_box_in(Path(tmp))


def _command_box_in(tmp_path: Path) -> None:
    (tmp_path / "given.txt").write_text("input")
    script = (
        'cat given.txt > copy.txt; echo "$HOME $PWD"; ls -A "$HOME" | wc -l; '
        "touch /home/box/mine && echo home-writable; env | sort | cut -d= -f1 | tr '\\n' ' '"
    )
    out = run_in_box(
        ["/bin/sh", "-c", script], workdir=tmp_path, limits=Limits(timeout_s=10, memory_mb=None),
        env={"PATH": "/usr/bin:/bin", "HOME": "/home/box", "MODEL_URL": "http://127.0.0.1:9"},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == ["/home/box /work", "0", "home-writable"]
    assert out.stdout.split("\n")[3].split() == ["HOME", "MODEL_URL", "PATH", "PWD"]
    assert (tmp_path / "copy.txt").read_text() == "input"
    assert all(p.stat().st_uid == os.getuid() for p in [tmp_path, *tmp_path.iterdir()])


@pytest.mark.skipif(os.geteuid() != 0, reason="the box drops to another uid only for root")
def test_as_root_a_work_directory_in_a_closed_folder_is_refused_clearly(tmp_path: Path) -> None:
    closed = tmp_path / "closed"
    (closed / "work").mkdir(parents=True)
    closed.chmod(0o700)
    with pytest.raises(ConfigError, match=r"closed to other users.*tempfile.mkdtemp"):
        run_in_box(["/bin/true"], workdir=closed / "work", limits=Limits(timeout_s=5))


def test_cpu_time_and_file_size_limits_kill_with_their_signal() -> None:
    busy = run_in_box(
        ["/usr/bin/python3", "-c", "while True: pass"], limits=Limits(timeout_s=20, cpu_s=1)
    )
    assert busy.returncode == -24 and not busy.timed_out and busy.duration_s < 10  # SIGXCPU
    big = "open('big', 'wb').write(b'x' * (3 * 1024 * 1024))"
    fat = run_in_box(["/usr/bin/python3", "-c", big], limits=Limits(timeout_s=20, file_mb=1))
    assert fat.returncode == -25 or "File too large" in fat.stderr  # SIGXFSZ / EFBIG
