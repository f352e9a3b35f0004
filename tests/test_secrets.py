"""Secrets never reach disk or logs (issue 11 §6): a server that echoes the Authorization header
in its error body, secret header names, ``user:password@`` in base_url, secret option names."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for `tests.servers`
from tests.servers import Fault, serve

from skillgrad.redact import REDACTED, is_secret_name, redact_json, redact_message

KEY = "sk-test-0123456789abcdefSECRET"
HEADER_KEY = "hdr-9876543210-zyxwvu"
URL_PASSWORD = "pw-hunter2-5551234"


def _all_text(root: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in sorted(root.rglob("*")) if p.is_file()
    )


def test_a_key_echoed_by_the_server_reaches_no_file_and_no_stderr(tmp_path: Path) -> None:
    with serve(api_key=KEY, reply=lambda body: "HELLO") as server:
        # every call is refused with a body that echoes the request's headers
        server.add_faults(*[Fault(status=400, message="bad", echo_headers=True)] * 50)
        model = {
            "provider": "openai_compatible",
            "base_url": server.base_url,
            "api_key_env": "MY_LLM_KEY",
            "max_retries": 0,
            "options": {"headers": {"X-Api-Key": HEADER_KEY}},
        }
        with_password = server.base_url.replace("http://", f"http://user:{URL_PASSWORD}@")
        config = tmp_path / "c.yaml"
        config.write_text(
            json.dumps(
                {
                    "env": {"task": "toy", "output_root": str(tmp_path / "runs")},
                    "train": {"num_epochs": 1, "batch_size": 2},
                    "models": {
                        "optimizer": {**model, "model": "opt", "base_url": with_password},
                        "target": {**model, "model": "tgt"},
                    },
                }
            )
        )
        env = {**os.environ, "MY_LLM_KEY": KEY}
        proc = subprocess.run(
            [sys.executable, "-m", "skillgrad", "train", str(config)],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    # the server did receive the key, and echoed it back
    assert any(r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests)
    written = _all_text(tmp_path / "runs")
    assert proc.returncode == 2, proc.stderr
    assert "request headers" in written and "request headers" in proc.stderr  # it was reported
    for secret in (KEY, HEADER_KEY, URL_PASSWORD):
        assert secret not in written, secret
        assert secret not in proc.stderr + proc.stdout, secret
    assert "Traceback" not in proc.stderr
    models = json.loads(next((tmp_path / "runs").rglob("config.json")).read_text())["models"]
    assert models["target"]["options"]["headers"]["X-Api-Key"] == REDACTED
    assert models["target"]["api_key_env"] == "MY_LLM_KEY"  # a variable's name is not a secret
    assert f"user:{REDACTED}@127.0.0.1" in models["optimizer"]["base_url"]


@pytest.mark.parametrize(
    "name",
    ["api-key", "X-Api-Key", "Ocp-Apim-Subscription-Key", "api_key", "access_token", "secret"],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)
    assert redact_json({"headers": {name: "abc"}}) == {"headers": {name: REDACTED}}


@pytest.mark.parametrize("name", ["api_key_env", "max_tokens", "tokenizer", "max_edit_tokens"])
def test_names_that_are_not_secrets(name: str) -> None:
    assert not is_secret_name(name)


def test_message_patterns() -> None:
    text = redact_message(
        "GET http://bob:pa55word@host/v1 failed; Authorization: Bearer abcdefghijkl0123"
    )
    assert "pa55word" not in text and "abcdefghijkl0123" not in text
    assert "bob:" in text and "host/v1" in text


def _not_private(root: Path) -> list[str]:
    """Folders under ``root`` (``root`` included) that are not 0700 and files not 0600."""
    bad = []
    for path in [root, *root.rglob("*")]:
        mode = path.stat().st_mode & 0o777
        if mode != (0o700 if path.is_dir() else 0o600):
            bad.append(f"{oct(mode)} {path}")
    return bad


def test_a_key_echoed_in_replies_reaches_no_file_and_every_file_is_private(tmp_path: Path) -> None:
    """A target endpoint that answers with the Authorization header it received: the call cache
    (request, response, results) holds ``***`` like every other file, ``skillgrad eval --out``
    too, and every file of the run directory is 0600 in folders of 0700."""
    fakes = Path(__file__).with_name("fakes_e2e.py")
    runs, out = tmp_path / "runs", tmp_path / "out" / "eval.json"
    with serve(api_key=KEY, echo_authorization=True) as server:
        target = {"provider": "openai_compatible", "base_url": server.base_url, "model": "tgt",
                  "api_key_env": "MY_LLM_KEY", "max_retries": 0}  # fmt: skip
        config = tmp_path / "echo.yaml"
        config.write_text(
            json.dumps(
                {
                    "env": {"task": "toy", "output_root": str(runs), "run_name": "echo"},
                    "train": {"num_epochs": 1, "batch_size": 2},
                    "models": {
                        "optimizer": {"provider": "function", "model": f"{fakes}:FakeOptimizer"},
                        "target": target,
                    },
                }
            )
        )
        env = {**os.environ, "MY_LLM_KEY": KEY}
        run = runs / "echo"
        commands = (
            ["train", str(config)],
            ["train", str(config)],  # resumed: replays the redacted cache
            ["eval", str(config), "--skill", str(run / "best_skill.md"), "--out", str(out)],
        )
        for command in commands:
            proc = subprocess.run(
                [sys.executable, "-m", "skillgrad", *command],
                env=env, capture_output=True, text=True, timeout=180,
            )  # fmt: skip
            assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
            assert KEY not in proc.stdout + proc.stderr
    assert server.requests and all(
        r.headers.get("authorization") == f"Bearer {KEY}" for r in server.requests
    )
    assert KEY not in _all_text(runs) and KEY not in out.read_text(encoding="utf-8")
    echoed = "(you sent Authorization: Bearer ***)"
    with sqlite3.connect(run / "calls.sqlite") as db:
        target_calls = "SELECT response FROM calls WHERE role = 'target'"
        responses = [r for (r,) in db.execute(target_calls)]
        results = [t for (t,) in db.execute("SELECT trajectory FROM results")]
    assert responses and all(echoed in r for r in responses)
    assert results and all(echoed in t for t in results)
    trajectories = (run / "steps" / "step_0001" / "trajectories.jsonl").read_text(encoding="utf-8")
    assert echoed in trajectories
    assert _not_private(runs) == [] and _not_private(out.parent) == []
