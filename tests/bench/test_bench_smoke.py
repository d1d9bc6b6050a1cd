"""bench/capacity.py end to end at a tiny size: its server process, client process and table work.

One step of 20 users at 10x the per-user rates (`--quick --users 20`). The latencies themselves are
not asserted (no timed assertions in the suite): only that every kind was measured and none failed.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys

from tests.support.paths import REPO


def test_capacity_quick_step_measures_every_kind() -> None:
    result = subprocess.run(
        [sys.executable, os.path.join("bench", "capacity.py"), "--quick", "--users", "20"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line for line in result.stdout.splitlines() if line.split("|")[0].strip() == "20"]
    assert len(rows) == 1, result.stdout
    cells = rows[0].split("|")
    for cell in cells[1:5]:  # send, fetch, presence, delivery: "p50 p99", and "!n" after failures
        assert "!" not in cell, rows[0]
        p50, p99 = (float(value) for value in cell.split())
        assert not math.isnan(p50) and 0 < p50 <= p99, rows[0]
    assert cells[-1].strip() in ("pass", "FAIL")
