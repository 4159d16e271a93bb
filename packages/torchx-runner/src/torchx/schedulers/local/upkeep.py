"""What the supervisor writes besides the app's state: the AppDef's record, the retention.

Both come off the launcher's clock and never delay the app: :func:`complete_request`
adds the AppDef's JSON document that the launcher left to the supervisor (see
:func:`torchx.schedulers.local.writing.write_records`), :func:`apply_retention` prunes
the state directory's finished apps once this one has ended. A failure of either is
logged in ``supervisor.log`` and costs nothing but what it would have written.
"""

from __future__ import annotations

import os
import sys

from torchx.schedulers.local.state import locked, write_json_atomic

TYPE_CHECKING = False  # typing costs every supervisor start milliseconds
if TYPE_CHECKING:
    from typing import Any


def complete_request(app_dir: str, request: dict[str, Any]) -> dict[str, Any]:
    """``request`` with the AppDef's JSON document, also written to request.json.

    The launcher wrote only the pickle (no serializer on its clock); the JSON document is
    the lasting record, readable by any later release. On failure ``request`` is
    returned as it was (describe reads the pickle).
    """
    try:
        import pickle

        from torchx.specs import serialize

        with open(os.path.join(app_dir, "appdef.pickle"), "rb") as f:
            app = pickle.load(f)["app"]
        complete = dict(request)
        complete["app"] = serialize.to_document(app)
        with locked(app_dir):  # an app deleted meanwhile has nowhere to write
            write_json_atomic(os.path.join(app_dir, "request.json"), complete)
        return complete
    except FileNotFoundError:
        pass  # deleted meanwhile: no record wanted
    except Exception:
        import traceback

        print("torchx: could not write the AppDef record:", file=sys.stderr)
        traceback.print_exc()
    return request


def apply_retention(app_dir: str, request: dict[str, Any]) -> None:
    """Prunes the state directory's finished apps (``retain_last``/``retain_for``).

    After the final state: it never delays an app's end. A failure is logged only.
    """
    last, keep_for = request.get("retain_last"), request.get("retain_for")
    if last is None and keep_for is None:
        return
    try:
        from torchx.schedulers.local.retention import prune

        prune(os.path.dirname(os.path.dirname(app_dir)), last, keep_for)
    except Exception:
        import traceback

        print("torchx: could not apply the retention:", file=sys.stderr)
        traceback.print_exc()
