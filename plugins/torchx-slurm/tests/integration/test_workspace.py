"""A directory workspace shipped with the job: copied into the job directory (ignore file honoured)."""

from __future__ import annotations

import re
from pathlib import Path

from torchx.schedulers.testing.cli import TorchxCli


def test_workspace_is_copied_into_the_job_directory(cli: TorchxCli, tmp_path: Path) -> None:
    ws = tmp_path / "project"
    ws.mkdir()
    (ws / "main.py").write_text("import os\nprint('files:', sorted(os.listdir('.')))\n")
    (ws / "secret.txt").write_text("not for the cluster\n")
    (ws / ".torchxignore").write_text("secret.txt\n")
    # from the project's directory, as a user runs it; the job directory elsewhere
    job_dir = tmp_path / "job"
    proc = cli(
        "run", "-s", "slurm", "-cfg", f"job_dir={job_dir}", "--log", "--workspace", ".",
        "utils.python", "--script", "main.py", timeout=120, cwd=ws,
    )  # fmt: skip
    files = re.search(r"files: \[(.*)\]", proc.stdout)
    assert files, proc.stdout + proc.stderr
    assert "'main.py'" in files.group(1) and "secret.txt" not in files.group(1), files.group(0)
    # the copy is in the job directory; the project is left as it was
    assert not list(job_dir.rglob("secret.txt")) and list(job_dir.rglob("main.py"))
    assert sorted(p.name for p in ws.iterdir()) == [".torchxignore", "main.py", "secret.txt"]
