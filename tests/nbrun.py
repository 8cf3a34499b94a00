"""Run a notebook in a fresh kernel and report what went wrong, cell by cell."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import nbformat

from tensorcourse.headless import HeadlessClient


@dataclass
class Ran:
    nb: nbformat.NotebookNode
    errors: list[str]   # "cell N: Ename: evalue" for each failing cell
    stderr: list[str]   # "cell N: text" for each stderr stream

    def text(self) -> str:
        return "\n".join(self.errors + self.stderr)


def run_notebook(path: Path, *, timeout: int = 120, cwd: Path | None = None,
                 env: dict[str, str] | None = None) -> Ran:
    nb = nbformat.read(path, as_version=4)
    client = HeadlessClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                     resources={"metadata": {"path": str(cwd or path.parent)}})
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        client.execute()
    finally:
        os.environ.clear()
        os.environ.update(old)
    errors, stderr = [], []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                errors.append(f"cell {i}: {out.ename}: {out.evalue}\n" + "\n".join(out.traceback)[-1500:])
            elif out.output_type == "stream" and out.name == "stderr":
                stderr.append(f"cell {i}: {out.text}")
    return Ran(nb, errors, stderr)
