"""Workspaces: local project directories mirrored into a job at submit time.

A :class:`Workspace` maps each local directory to a sub-directory of the job's
workspace root (``""`` for the root itself). Schedulers that ship local code
(see ``WorkspaceMixin`` in torchx-runner) copy or build these into the image.

>>> ws = Workspace.from_str("~/github/torch")
>>> ws.projects, ws.is_unmapped_single_project()
({'~/github/torch': ''}, True)
>>> Workspace.from_str("~/a=a,~/b=lib/b").projects
{'~/a': 'a', '~/b': 'lib/b'}
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import attrs

from torchx.specs.errors import InvalidWorkspaceException

if TYPE_CHECKING:
    from pathlib import Path

_FORM = "expected 'DIR' or 'DIR=SUBDIR[,DIR=SUBDIR...]' (or a JSON object of DIR to SUBDIR)"


@attrs.define(eq=True)
class Workspace:
    """Maps local project directories to remote workspace locations: ``{local_path: remote_subdir}``."""

    projects: dict[str, str]

    def is_unmapped_single_project(self) -> bool:
        """True if this is a single-project workspace with no target sub-directory."""
        return len(self.projects) == 1 and next(iter(self.projects.values())) == ""

    def merge_into(self, outdir: str | Path) -> None:
        """Copies each project into ``{outdir}/{target}`` (files overwrite, directories merge)."""
        import shutil
        from pathlib import Path

        out = Path(outdir)
        for src, target in self.projects.items():
            source = Path(os.path.expanduser(src))
            dest = out / target if target else out
            if source.is_dir():
                shutil.copytree(source, dest, dirs_exist_ok=True, symlinks=True)
            elif source.exists():
                dest.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, dest / source.name)
            else:
                raise InvalidWorkspaceException(f"workspace project {src!r} does not exist")

    @staticmethod
    def from_str(workspace: str) -> Workspace:
        """Parses a workspace string.

        ``"DIR"`` maps one directory to the root; ``"A=a,B=b"`` maps several; a JSON
        object (``{"A": "a"}``) is accepted too. Raises
        :class:`~torchx.specs.errors.InvalidWorkspaceException` on anything else.
        """
        if not isinstance(workspace, str) or not workspace.strip():
            raise InvalidWorkspaceException(f"empty workspace {workspace!r}: {_FORM}")
        text = workspace.strip()
        if text.startswith("{"):
            import json

            try:
                parsed = json.loads(text)
            except json.JSONDecodeError as e:
                raise InvalidWorkspaceException(f"bad JSON workspace {text!r}: {e.msg}") from None
            if not isinstance(parsed, dict) or not all(
                isinstance(k, str) and k and isinstance(v, str) for k, v in parsed.items()
            ):
                raise InvalidWorkspaceException(f"bad workspace {text!r}: {_FORM}")
            return Workspace(projects=dict(parsed))
        if "=" not in text:
            return Workspace(projects={text: ""})
        projects: dict[str, str] = {}
        for part in text.split(","):
            src, sep, dst = part.partition("=")
            src, dst = src.strip(), dst.strip()
            if not sep or not src:
                raise InvalidWorkspaceException(
                    f"bad workspace entry {part!r} in {text!r}: {_FORM}"
                )
            if src in projects:
                raise InvalidWorkspaceException(
                    f"workspace directory {src!r} given twice in {text!r}"
                )
            projects[src] = dst
        return Workspace(projects=projects)

    def __str__(self) -> str:
        if self.is_unmapped_single_project():
            return next(iter(self.projects))
        return ",".join(f"{k}={v}" for k, v in self.projects.items())
