"""What upstream TorchX users already have keeps working: ``[slurm]`` sections and handles."""

from __future__ import annotations

from pathlib import Path

import pytest
from torchx_slurm.parse import SEP

from torchx.runner import get_runner
from torchx.schedulers.testing.fake_tools import FakeTools
from torchx.specs import AppState

# a .torchxconfig as an upstream user writes it (upstream's option names and spellings)
UPSTREAM_CONFIG = """\
[slurm]
partition = compute
time = 1:00:00
account = ml-team
qos = high
constraint = a100
comment = nightly run
mail-user = me@example.org
mail-type = END,FAIL
job_dir = {job_dir}
nomem = true
"""


def test_an_upstream_slurm_section_configures_the_job(
    fake_slurm: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / ".torchxconfig"
    config.write_text(UPSTREAM_CONFIG.format(job_dir=tmp_path / "jobs"))
    monkeypatch.setenv("TORCHXCONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    with get_runner() as runner:
        info = runner.dryrun_component("utils.echo", ["--msg", "hi"], "slurm")
    header = [line for line in str(info).splitlines() if line.startswith("#SBATCH")]
    for line in [
        f"#SBATCH --chdir={tmp_path / 'jobs'}",
        '#SBATCH --comment="nightly run"',
        "#SBATCH --mail-user=me@example.org",
        "#SBATCH --mail-type=END,FAIL",
        "#SBATCH --partition=compute",
        "#SBATCH --time=1:00:00",
        "#SBATCH --account=ml-team",
        "#SBATCH --qos=high",
        "#SBATCH --constraint=a100",
    ]:
        assert line in header
    assert not any(line.startswith("#SBATCH --mem") for line in header)  # nomem
    assert fake_slurm.all_calls() == []


def test_an_upstream_handle_is_followed(fake_slurm: FakeTools, tmp_path: Path) -> None:
    # upstream's handles are slurm://<session>/<job id>; the session does not matter
    fake_slurm.answer(
        "squeue",
        stdout=SEP.join(["1234", "RUNNING", "me", "n1", "None", "echo:echo:0", str(tmp_path)])
        + "\n",
    )
    with get_runner() as runner:
        status = runner.status("slurm://torchx_user/1234")
    assert status is not None and status.state == AppState.RUNNING
    assert fake_slurm.calls("squeue")[0][3:5] == ["-j", "1234"]


def test_sbatch_args_in_a_config_file_take_any_list(
    fake_slurm: FakeTools, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / ".torchxconfig"
    config.write_text("[slurm]\nsbatch_args = --reservation=maint,--begin=now+60\n")
    monkeypatch.setenv("TORCHXCONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    with get_runner() as runner:
        info = runner.dryrun_component("utils.echo", ["--msg", "hi"], "slurm")
    header = [line for line in str(info).splitlines() if line.startswith("#SBATCH")]
    assert header[-2:] == ["#SBATCH --reservation=maint", "#SBATCH --begin=now+60"]
