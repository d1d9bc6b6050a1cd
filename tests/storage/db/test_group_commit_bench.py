"""bench/send_throughput.py end to end at a tiny size: its server process, the floors and the table.

No figure is asserted (no timed assertions in the suite): only that both channels were measured,
every send was answered with success, and the server ran them through the group commit.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

from tests.support.paths import REPO


def test_send_throughput_tiny_run(tmp_path) -> None:
    command = [sys.executable, os.path.join("bench", "send_throughput.py"), "--subscribers", "30", "--history", "10",
               "--count", "20", "--warmup", "5", "--tmp", str(tmp_path)]  # fmt: skip
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = {line.split("|")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("| ")}
    assert set(rows) == {"channel", "big", "small"}, result.stdout
    for name in ("big", "small"):
        cells = [cell.strip() for cell in rows[name].split("|")[2:-1]]
        assert len(cells) == 8 and float(cells[0]) > 0, rows[name]
    sends = re.search(r"group commit: (\d+) sends in (\d+) transactions", result.stdout)
    assert sends is not None, result.stdout
    assert int(sends[1]) == 2 * (20 + 5) and 1 <= int(sends[2]) <= int(sends[1])
