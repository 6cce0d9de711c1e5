"""What reading `HUIYI_HOME/config.toml` costs every process that starts (a hook pays it on
every call).

    python benchmarks/bench_config.py              # 20 process starts each way
    python benchmarks/bench_config.py --starts 50

Times, against a temporary HUIYI_HOME: a fresh `python -c` that imports `huiyi.config` and
calls `Settings.from_env()`, without a file and with a file that sets every key (the file
costs the `tomllib` import and one parse); and `load()` in a warm process, both ways. Prints
median, min and max. The tests check what the settings are, never how fast: speed is here.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: this checkout's huiyi, whatever the venv has installed
SRC = Path(__file__).resolve().parent.parent / "src"
sys.path.insert(0, str(SRC))

from huiyi.cli.config import template  # noqa: E402
from huiyi.config import load  # noqa: E402

ASSIGNED = re.compile(r"^# (\w+ = .*)$")
START = "import huiyi.config as c; c.Settings.from_env()"


def every_key_set(home: Path) -> None:
    """The commented template with every line but the API keys uncommented."""
    lines = template(load({}, read_file=False).values).splitlines()
    text = "\n".join(
        m.group(1) if (m := ASSIGNED.match(line)) and "apiKey" not in line else line
        for line in lines
    )
    path = home / "config.toml"
    path.write_text(text + "\n", encoding="utf-8")
    path.chmod(0o600)


def timed(fn: Callable[[], object], times: int) -> list[float]:
    out = []
    for _ in range(times):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def report(name: str, seconds: list[float]) -> None:
    ms = [s * 1000 for s in seconds]
    print(
        f"{name:<34} median {statistics.median(ms):7.2f} ms   "
        f"min {min(ms):7.2f}   max {max(ms):7.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=20, help="process starts each way")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / ".huiyi"
        home.mkdir()
        env = {**os.environ, "HOME": tmp, "HUIYI_HOME": str(home), "PYTHONPATH": str(SRC)}

        def start() -> None:
            subprocess.run([sys.executable, "-c", START], env=env, check=True)

        def warm() -> None:
            load(env)

        report("process start, no config.toml", timed(start, args.starts))
        report("load() in a warm process, no file", timed(warm, 200))
        every_key_set(home)
        assert load(env).file_found
        report("process start, every key in file", timed(start, args.starts))
        report("load() in a warm process, file", timed(warm, 200))


if __name__ == "__main__":
    main()
