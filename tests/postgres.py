"""A throw-away PostgreSQL server for the tests: Debian's `postgresql` package, a new cluster made with initdb
in a temporary folder, started with pg_ctl on a free port, stopped and deleted at the end. Never a mock.
As root, the server runs as the `postgres` user (PostgreSQL refuses to run as root)."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

USER = "lab"


def binaries() -> Path | None:
    """The folder of initdb and pg_ctl: Debian keeps them in /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


class Server:
    """One cluster; `url` is what a user writes in LAB_CLASS_DB."""

    def __init__(self, port: int):
        folder = binaries()
        if folder is None:
            raise RuntimeError("PostgreSQL is not installed: apt-get install postgresql")
        self.port = port
        self.root = Path(tempfile.mkdtemp(prefix="lmlab-postgres-"))
        self.data = self.root / "data"
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
        self.pg_ctl = str(folder / "pg_ctl")
        subprocess.run(_as_server_user([str(folder / "initdb"), "-D", str(self.data), "-U", USER, "-A", "trust",
                                        "--no-sync", "-E", "UTF8"]), check=True, capture_output=True)
        self.start()
        self.url = f"postgresql://{USER}@127.0.0.1:{port}/postgres"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c max_connections=200"
        subprocess.run(_as_server_user([self.pg_ctl, "-D", str(self.data), "-o", options, "-l",
                                        str(self.root / "server.log"), "-w", "-t", "60", "start"]),
                       check=True, capture_output=True)

    def stop(self, mode: str = "fast") -> None:
        subprocess.run(_as_server_user([self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "stop"]),
                       capture_output=True)

    def close(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
