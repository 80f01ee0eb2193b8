"""A 64 MiB encrypted round trip through the Python CLI with flat memory (peak RSS of each process)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, SOURCE, Server, new_slug, run_python

MiB = 1024 * 1024


def peak_rss(args: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """Runs ``python3 -m handoff ARGS``; answers its peak RSS in bytes and its stdout."""
    with subprocess.Popen(
        [sys.executable, "-m", "handoff", *args],
        cwd=ROOT,
        env={**os.environ, **env, "PYTHONPATH": str(SOURCE)},
        stdout=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None
        out = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
    assert process.returncode == 0, out
    return usage.ru_maxrss * 1024, out


def test_64_mib_round_trip_in_flat_memory(server: Server, tmp_path: Path) -> None:
    env = server.new_account()
    ids = {}
    for role in ("sender", "receiver"):
        slug = new_slug(role)
        ids[role] = (tmp_path / f"{slug}.json", slug)
        assert run_python(["identity", "new", "--agent", slug, "--out", str(ids[role][0])], env).status == 0
    small, large = tmp_path / "small.bin", tmp_path / "large.bin"
    small.write_bytes(os.urandom(1024))
    with open(large, "wb") as file:
        for _ in range(64):
            file.write(os.urandom(MiB))

    def round_trip(path: Path) -> tuple[int, int]:
        send_rss, out = peak_rss(["send", "--identity", str(ids["sender"][0]), "--to", ids["receiver"][1], str(path)], env)
        transfer_id = json.loads(out)["id"]
        receive_rss, _ = peak_rss(["receive", transfer_id, "--identity", str(ids["receiver"][0]), "--out", str(tmp_path / "out")], env)
        return send_rss, receive_rss

    baseline = round_trip(small)
    measured = round_trip(large)
    digest = hashlib.sha256(large.read_bytes()).hexdigest()
    assert hashlib.sha256((tmp_path / "out" / "large.bin").read_bytes()).hexdigest() == digest
    # The whole file would be 64 MiB at least; streaming keeps each process within a few records of its start.
    for base, peak in zip(baseline, measured):
        assert peak - base < 24 * MiB, f"peak RSS {peak / MiB:.1f} MiB against {base / MiB:.1f} MiB for 1 KiB"
        assert peak < 100 * MiB
