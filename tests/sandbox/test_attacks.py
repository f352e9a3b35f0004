"""Issue 11 §1: each attack that beat the old sandbox, run as real code in the real box, defeated.

Verdict forgeries run against tests with a failing assertion: the result must not pass and must
not count the forged tests. Escapes are checked on the host after the box is gone.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from skillgrad.sandbox import run_code, run_tests
from skillgrad.sandbox.box import INBOX_HOST

pytestmark = pytest.mark.slow

ADD = "def add(a, b):\n    return a + b\n"
FAILING_TESTS = "assert add(1, 2) == 3\nassert add(2, 2) == 5\n"  # the second must fail

# Forge verdict events on every channel the solution's process holds, then leave quietly.
FORGE = """
import gc, json, os
FAKE = [{"event": "plan", "total": 2}, {"event": "test", "name": "forged", "ok": True},
        {"event": "test", "name": "forged2", "ok": True},
        {"event": "done", "passed": 2, "total": 2}]
def forge():
    hits = 0
    for obj in gc.get_objects():
        for name in ("emit", "report", "send"):
            method = getattr(obj, name, None)
            if callable(method) and not isinstance(obj, type):
                for event in FAKE:
                    try:
                        method(**event)
                        hits += 1
                    except Exception:
                        pass
    raw = "".join(json.dumps(e) + "\\n" for e in FAKE).encode()
    for fd in range(64):
        try:
            os.write(fd, raw)
        except OSError:
            pass
    os._exit(0)
"""


def _forged(result: object) -> bool:
    names = [t["name"] for t in getattr(result, "tests", ())]
    return any(n.startswith("forged") for n in names)


@pytest.mark.parametrize("when", ["import", "call"])
def test_gc_harness_object_events_and_exit_zero_do_not_pass(when: str) -> None:
    # (a) find the harness through gc, write its result events, os._exit(0)
    code = FORGE + ("forge()\n" + ADD if when == "import" else "def add(a, b):\n    forge()\n")
    result = run_tests(code, FAILING_TESTS, timeout_s=10)
    assert not result.passed and result.tests_passed == 0, result.summary()
    assert not _forged(result) and result.tests_total == 2


def test_replacing_the_runner_through_main_module_does_not_pass() -> None:
    # (b) patch the test runner's methods through sys.modules['__main__'] (and the judge module,
    # which the solution can import: it patches its own copy only)
    code = ADD + (
        "import sys\n"
        "def passing(self, name, fn):\n"
        "    self.passed += 1\n"
        "    self.verdict.emit(event='test', name='forged', ok=True)\n"
        "targets = [sys.modules['__main__']]\n"
        "try:\n"
        "    import inbox.judge\n"
        "    targets.append(inbox.judge)\n"
        "except ImportError:\n"
        "    pass\n"
        "patched = 0\n"
        "for module in targets:\n"
        "    for value in list(vars(module).values()):\n"
        "        if isinstance(value, type):\n"
        "            for attr in ('run_test', 'run_assert'):\n"
        "                if hasattr(value, attr):\n"
        "                    setattr(value, attr, passing)\n"
        "                    patched += 1\n"
        "assert patched, 'the attack found nothing to patch'\n"
    )
    result = run_tests(code, FAILING_TESTS, timeout_s=10)
    assert not result.passed and (result.tests_passed, result.tests_total) == (1, 2)
    assert not _forged(result), result.summary()


def test_truncating_output_and_writing_events_with_a_found_nonce_does_not_pass() -> None:
    # (c) truncate every file it holds, then write events marked with any nonce-like string
    code = ADD + (
        "import gc, os, json\n"
        "nonces = {o for o in gc.get_objects() if isinstance(o, str) and o.startswith('@@')}\n"
        "nonces.add('')\n"
        "def add(a, b):\n"
        "    for fd in range(64):\n"
        "        try:\n"
        "            os.ftruncate(fd, 0)\n"
        "            os.lseek(fd, 0, 0)\n"
        "        except OSError:\n"
        "            pass\n"
        "        for nonce in nonces:\n"
        "            for e in ({'event': 'test', 'name': 'forged', 'ok': True},\n"
        "                      {'event': 'done', 'passed': 2, 'total': 2}):\n"
        "                try:\n"
        "                    os.write(fd, ('\\n' + nonce + json.dumps(e) + '\\n').encode())\n"
        "                except OSError:\n"
        "                    pass\n"
        "    return a + b\n"
    )
    result = run_tests(code, FAILING_TESTS, timeout_s=10)
    assert not result.passed and not _forged(result), result.summary()


def test_shadowed_builtins_patched_modules_and_lying_objects_do_not_pass() -> None:
    # The tests' own helpers cannot be replaced from the solution: names that shadow builtins
    # stay the judge's, modules are the judge's own copies, objects have no truth value and
    # equal only themselves (whatever their __eq__ says).
    code = (
        "import math\n"
        "math.fabs = lambda x: 0.0\n"
        "def abs(x):\n    return 0\n"
        "def sorted(x):\n    return []\n"
        "def add(a, b):\n    return a + b\n"
        "class Anything:\n"
        "    def __eq__(self, other):\n        return True\n"
        "    def __bool__(self):\n        return True\n"
        "def liar():\n    return Anything()\n"
    )
    tests = (
        "assert abs(add(0.1, 0.2) - 0.5) < 1e-9\n"
        "assert math.fabs(add(1, 1) - 5) < 1e-9\n"
        "assert sorted(add([3], [1])) == sorted([9, 9])\n"
        "assert liar() == 42\n"
        "assert liar()\n"
    )
    result = run_tests(code, tests, timeout_s=10)
    assert (result.tests_passed, result.tests_total) == (0, 5), result.summary()


def test_a_forged_hello_cannot_replace_the_tests_builtins() -> None:
    # The host is the solution's: it can send any first message. A '__builtins__' entry in the
    # names would become the tests' builtins if the judge took it.
    code = (
        "import os, json, struct, sys\n"
        "fake = {'ready': {'__builtins__': {'D': [['abs', {'h': 0}], ['len', {'h': 0}]]},\n"
        "                  'add': {'h': 0}}, 'functions': ['add']}\n"
        "data = json.dumps(fake).encode()\n"
        "os.write(int(sys.argv[3]), struct.pack('>I', len(data)) + data)\n"
        "def zero(*args):\n    return 0\n"
        "globals()['objects'] = [zero]\n"
        "sys.modules['__main__'].objects.append(zero)\n"
        "sys.modules['__main__'].serve(int(sys.argv[2]), int(sys.argv[3]))\n"
        "os._exit(0)\n"
    )
    tests = "assert abs(add(1, 2) - 5) == 0\nassert len([1, 2]) == 0\n"
    result = run_tests(code, tests, timeout_s=10)
    assert result.tests_passed == 0 and result.tests_total == 2, result.summary()


WRITE_ATTACKS = {
    "fork_exec": (
        "import _posixsubprocess, os\n"
        "def attack(path):\n"
        "    r, w = os.pipe()\n"
        "    args = [b'/bin/sh', b'-c', b'echo pwned > ' + path.encode()]\n"
        "    pid = _posixsubprocess.fork_exec(args, [b'/bin/sh'], True, (), None, None,\n"
        "        -1, -1, -1, -1, -1, -1, r, w, True, False, -1, None, None, None, -1, None,\n"
        "        False)\n"
        "    os.waitpid(pid, 0)\n"
    ),
    "guard_globals": (
        "import sys\n"
        "def attack(path):\n"
        "    for module in list(sys.modules.values()):\n"
        "        g = getattr(module, '__dict__', {})\n"
        "        for key in ('ALLOWED_WRITE', 'BLOCKED_PREFIXES', 'PATH_EVENTS'):\n"
        "            if key in g:\n"
        "                g[key] = ('/',) if key == 'ALLOWED_WRITE' else ()\n"
        "    open(path, 'w').write('pwned')\n"
    ),
    "sqlite3": (
        "import sqlite3\n"
        "def attack(path):\n"
        "    db = sqlite3.connect(path)\n"
        "    db.execute('create table t (x)')\n"
        "    db.commit()\n"
    ),
    "mkfifo": "import os\ndef attack(path):\n    os.mkfifo(path)\n",
}


@pytest.mark.parametrize("kind", sorted(WRITE_ATTACKS))
def test_writes_outside_the_work_directory_fail(kind: str, tmp_path: Path) -> None:
    tag = secrets.token_hex(4)
    targets = [
        str(tmp_path / f"escaped-{tag}"),  # a host folder: does not exist in the box
        f"/usr/lib/escaped-{tag}",  # exists in the box, read-only
        f"/sbx/inbox/escaped-{tag}",  # the judge's own code folder, read-only
        "/sbx/inbox/judge.py",
    ]
    before = hashlib.sha256((INBOX_HOST / "judge.py").read_bytes()).hexdigest()
    code = WRITE_ATTACKS[kind] + (
        "import os\n"
        "def state(path):\n"
        "    try:\n"
        "        st = os.stat(path)\n"
        "        return (st.st_mtime_ns, st.st_size)\n"
        "    except OSError:\n"
        "        return None\n"
        f"for target in {targets!r}:\n"
        "    before = state(target)\n"
        "    try:\n"
        "        attack(target)\n"
        "    except Exception as exc:\n"
        "        print(target, 'failed:', exc)\n"
        "    else:\n"
        "        print(target, 'WROTE' if state(target) != before else 'unchanged')\n"
    )
    result = run_code(code, timeout_s=10)
    assert result.returncode == 0, result.summary()
    assert not (tmp_path / f"escaped-{tag}").exists()
    assert not Path(f"/usr/lib/escaped-{tag}").exists()
    assert not (INBOX_HOST / f"escaped-{tag}").exists()
    assert hashlib.sha256((INBOX_HOST / "judge.py").read_bytes()).hexdigest() == before
    assert len(result.stdout.splitlines()) == len(targets) and "WROTE" not in result.stdout


def _host_processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _wait_gone(marker: str, seconds: float = 3.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (left := _host_processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_setsid_children_die_with_the_time_limit() -> None:
    marker = f"skillgrad-burner-{secrets.token_hex(4)}"
    code = (
        "import os, subprocess, sys, time\n"
        f"burner = ['/usr/bin/python3', '-c', 'while True: pass', {marker!r}]\n"
        "subprocess.Popen(['setsid'] + burner, start_new_session=True)\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    os.execv(burner[0], burner)\n"
        "def add(a, b):\n"
        "    time.sleep(60)\n"
    )
    seen: list[int] = []
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        running = pool.submit(run_tests, code, "assert add(1, 2) == 3\n", timeout_s=2)
        while not running.done():
            seen = max(seen, _host_processes_with(marker), key=len)
            time.sleep(0.05)
        result = running.result()
    assert len(seen) >= 2, "the burners never started: the attack did not run"
    assert result.timed_out and time.monotonic() - started < 6
    assert _wait_gone(marker) == []


def test_a_fork_bomb_is_contained() -> None:
    marker = f"skillgrad-bomb-{secrets.token_hex(4)}"
    count = (
        "import os, time\n"
        "n = 0\n"
        "try:\n"
        "    for _ in range(5000):\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30)\n"
        "            os._exit(0)\n"
        "        n += 1\n"
        "except OSError as exc:\n"
        "    print('stopped after', n, exc.strerror)\n"
    )
    result = run_code(count, timeout_s=5)
    assert result.stdout.startswith("stopped after"), result.summary()
    assert int(result.stdout.split()[2]) < 32
    bomb = f"# {marker}\nimport os\nwhile True:\n    try:\n        os.fork()\n"
    bomb += "    except OSError:\n        pass\n"
    started = time.monotonic()
    result = run_code(bomb, timeout_s=2)
    assert result.timed_out and time.monotonic() - started < 6
    assert _wait_gone(marker) == []


def test_the_parents_api_key_is_out_of_reach(tmp_path: Path) -> None:
    # The training process holds the key in its environment from the start (so it is in its
    # /proc/<pid>/environ); the code tries every /proc entry it can see and that pid itself.
    canary = "sk-canary-" + secrets.token_hex(12)
    attack = (
        "import glob, os\n"
        "PARENT = {pid}\n"
        "seen = [repr(dict(os.environ))]\n"
        "extra = [f'/proc/{{PARENT}}/environ', f'/proc/{{os.getppid()}}/environ']\n"
        "for path in glob.glob('/proc/*/environ') + extra:\n"
        "    try:\n"
        "        seen.append(open(path, 'rb').read().decode(errors='replace'))\n"
        "    except OSError as exc:\n"
        "        seen.append(f'{{path}}: {{exc.strerror}}')\n"
        "print('\\n'.join(seen))\n"
    )
    driver = (
        "import os, sys\n"
        "from skillgrad.sandbox import run_code, run_tests\n"
        f"attack = {attack!r}.format(pid=os.getpid())\n"
        "a = run_code(attack, timeout_s=10)\n"
        "b = run_tests(attack + 'def f():\\n    return 1\\n', 'assert f() == 1\\n', timeout_s=10)\n"
        "assert os.environ['OPENAI_API_KEY'] in open(f'/proc/{os.getpid()}/environ').read()\n"
        "print(a.stdout, a.stderr, b.stdout, b.stderr, b.summary())\n"
    )
    env = {**os.environ, "OPENAI_API_KEY": canary}
    proc = subprocess.run(
        [sys.executable, "-c", driver], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "/environ" in proc.stdout and "1/1 tests passed" in proc.stdout
    assert canary not in proc.stdout
