"""Install the pinned real agent CLIs from npm into `.clients/` at the repository root.

    python tests/clients/install.py [claude|codex|all] [--force] [--root DIR]

Each client goes to `.clients/<name>-<version>/` (`npm install --prefix`, ignored by git) and
is checked with `--version`; a stamp file `.installed` (JSON: package, version, seconds taken)
is written last, so a second call returns at once. Installs run under a file lock and land
through a rename, so two processes (pytest and a terminal) never see half an install.
Needs `npm` and the npm registry; nothing else is downloaded (the native binaries ship inside
the packages' platform dependencies). Pytest uses `installed(name)` from a session fixture.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / ".clients"


@dataclass(frozen=True)
class Client:
    name: str
    package: str
    version: str
    bin: str
    #: what `<bin> --version` prints, to check the install
    version_line: str

    def home(self, root: Path = ROOT) -> Path:
        return root / f"{self.name}-{self.version}"

    def executable(self, root: Path = ROOT) -> Path:
        return self.executable_in(self.home(root))

    def executable_in(self, prefix: Path) -> Path:
        return prefix / "node_modules" / ".bin" / self.bin


CLIENTS = {
    "claude": Client(
        "claude", "@anthropic-ai/claude-code", "2.1.332", "claude", "2.1.332 (Claude Code)"
    ),
    "codex": Client("codex", "@openai/codex", "0.171.0", "codex", "codex-cli 0.171.0"),
}

STAMP = ".installed"


class InstallError(RuntimeError):
    pass


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _check(executable: Path, client: Client) -> str:
    try:
        out = subprocess.run(
            [str(executable), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallError(f"{client.package}: `{executable} --version` failed: {exc}") from exc
    line = out.stdout.strip()
    if out.returncode != 0 or line != client.version_line:
        raise InstallError(
            f"{client.package}: `{executable} --version` said {line!r} (exit {out.returncode}),"
            f" expected {client.version_line!r}; stderr: {out.stderr.strip()[-500:]}"
        )
    return line


def stamp(client: Client, root: Path = ROOT) -> dict[str, object] | None:
    path = client.home(root) / STAMP
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.get("version") != client.version or not client.executable(root).exists():
        return None
    return data  # type: ignore[no-any-return]


def install(name: str, *, root: Path = ROOT, force: bool = False) -> Path:
    """Install one client (if not already) and return its executable."""
    client = CLIENTS[name]
    if not force and stamp(client, root) is not None:
        return client.executable(root)
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError(f"{client.package}@{client.version}: npm is not on PATH")
    with _locked(root):
        if not force and stamp(client, root) is not None:  # another process just did it
            return client.executable(root)
        dest = client.home(root)
        for stale in root.glob(f".{dest.name}.tmp-*"):  # left by an interrupted install
            shutil.rmtree(stale, ignore_errors=True)
        work = root / f".{dest.name}.tmp-{os.getpid()}"
        work.mkdir(parents=True)
        started = time.monotonic()
        command = [
            npm,
            "install",
            "--prefix",
            str(work),
            "--no-save",
            "--no-package-lock",
            "--no-audit",
            "--no-fund",
            "--no-update-notifier",
            "--loglevel=error",
            f"{client.package}@{client.version}",
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(work, ignore_errors=True)
            raise InstallError(f"{' '.join(command)} timed out after 900 s") from exc
        if done.returncode != 0:
            shutil.rmtree(work, ignore_errors=True)
            raise InstallError(
                f"{' '.join(command)} failed (exit {done.returncode}):\n{done.stderr[-2000:]}"
            )
        version_line = _check(client.executable_in(work), client)
        seconds = round(time.monotonic() - started, 1)
        info = {
            "package": client.package,
            "version": client.version,
            "version_line": version_line,
            "seconds": seconds,
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        (work / STAMP).write_text(json.dumps(info, indent=1) + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        work.rename(dest)
    return client.executable(root)


def installed(name: str) -> Path:
    """For pytest: the client's executable, installing it first if needed. Raises
    InstallError with the reason when that is impossible (tests fail on it, never skip)."""
    return install(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("which", nargs="?", default="all", choices=[*CLIENTS, "all"])
    parser.add_argument("--force", action="store_true", help="reinstall even if stamped")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    names = list(CLIENTS) if args.which == "all" else [args.which]
    status = 0
    for name in names:
        client = CLIENTS[name]
        before = None if args.force else stamp(client, args.root)
        started = time.monotonic()
        try:
            path = install(name, root=args.root, force=args.force)
        except InstallError as exc:
            print(f"{name}: FAILED: {exc}", file=sys.stderr)
            status = 1
            continue
        took = time.monotonic() - started
        info = stamp(client, args.root) or {}
        what = "already installed" if before is not None else f"installed in {took:.1f} s"
        print(f"{name} {client.version}: {what} ({info.get('version_line')}): {path}")
    return status


if __name__ == "__main__":
    sys.exit(main())
