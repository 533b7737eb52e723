"""Each peer's scratch venv under var/peers/<peer>-<version>/ (var/ is not committed), made once
and reused while its requirements and constraints stay the same. The peers are never the
project's dependencies: only this helper installs them, only there."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from .registry import Peer

ROOT = Path(__file__).resolve().parents[2]
VAR = ROOT / "var" / "peers"
CONSTRAINTS = Path(__file__).resolve().parent / "constraints"


def venv_dir(peer: Peer) -> Path:
    return VAR / f"{peer.name}-{peer.version}"


def python_of(peer: Peer) -> Path:
    return venv_dir(peer) / "bin" / "python"


def constraints_of(peer: Peer) -> Path:
    return CONSTRAINTS / f"{peer.name}.txt"


def fingerprint(peer: Peer) -> str:
    """What the venv was built from: a change to the pins rebuilds it."""
    digest = hashlib.sha256("\n".join(peer.requirements).encode())
    constraints = constraints_of(peer)
    if constraints.exists():
        digest.update(constraints.read_bytes())
    return digest.hexdigest()


def find_python() -> str:
    found = subprocess.run(
        [str(ROOT / "scripts" / "find-python")], capture_output=True, text=True, check=False
    )
    return found.stdout.strip() if found.returncode == 0 else sys.executable


def ensure(peer: Peer, log) -> Path:
    """The peer's venv, built if missing or stale; its pip freeze kept beside it. Hammerweb
    runs from the project's own venv, which `make venv` builds."""
    if peer.project:
        python = ROOT / ".venv" / "bin" / "python"
        if not python.exists():
            raise FileNotFoundError(f"{python}: run `make venv` first")
        return python
    where = venv_dir(peer)
    stamp = where / ".installed"
    if stamp.exists() and stamp.read_text() == fingerprint(peer):
        return python_of(peer)
    log(f"building {where.relative_to(ROOT)} (pip, once) ...")
    where.parent.mkdir(parents=True, exist_ok=True)
    if not python_of(peer).exists():
        subprocess.run([find_python(), "-m", "venv", str(where)], check=True)
    pip = [str(python_of(peer)), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    command = [*pip, *peer.requirements]
    if constraints_of(peer).exists():
        command += ["-c", str(constraints_of(peer))]
    subprocess.run(command, check=True)
    frozen = subprocess.run(
        [str(python_of(peer)), "-m", "pip", "freeze", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    (where / "freeze.txt").write_text(frozen)
    stamp.write_text(fingerprint(peer))
    return python_of(peer)


def packages(peer: Peer) -> dict[str, str]:
    """name -> version from the venv's freeze, for the report."""
    frozen = venv_dir(peer) / "freeze.txt"
    if peer.project:
        return {}  # pinned in pyproject.toml
    if not frozen.exists():
        return {}
    found = {}
    for line in frozen.read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep:
            found[name.lower()] = version
    return found
