"""Execute one prepared submission notebook and stream what happens to a JSON-lines file.

Run as a script by :mod:`attnclust.assignments.grading` in its own process (it imports only
nbformat and nbclient, not attnclust, so it starts fast):

    python _worker.py NOTEBOOK RESULTS.jsonl CELL_TIMEOUT [EXECUTED.ipynb]

Every code cell runs with ``allow_errors`` (an error in one cell does not stop the others) and
a per-cell time limit; a cell over its limit is interrupted (SIGINT) and recorded as an error,
and execution goes on. Each event is appended to RESULTS as soon as it happens, so the parent
keeps everything recorded before it kills this process at the whole-notebook time limit:

    {"event": "kernel", "pid": ...}                       kernel started
    {"event": "check", "index": i, "label": ..., "status": "ok"|"error", "ename", "evalue"}
    {"event": "error", "index": i, "ename", "evalue"}     a non-check cell raised
    {"event": "done"} | {"event": "dead", "error": ...}   end of the notebook / kernel died
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    nb_path, results_path, cell_timeout = argv[0], argv[1], float(argv[2])
    executed_path = argv[3] if len(argv) > 3 else None
    nb = nbformat.read(nb_path, as_version=4)
    out = open(results_path, "a", buffering=1)

    def emit(**event) -> None:
        out.write(json.dumps(event) + "\n")
        out.flush()

    def on_cell_executed(cell, cell_index, execute_reply):
        content = (execute_reply or {}).get("content", {})
        status = content.get("status", "ok")
        info = cell.metadata.get("attnclust", {})
        if "check" in info:
            emit(event="check", index=cell_index, label=info["check"], status=status,
                 ename=content.get("ename", ""), evalue=content.get("evalue", ""))
        elif status != "ok":
            emit(event="error", index=cell_index, ename=content.get("ename", ""),
                 evalue=content.get("evalue", ""))

    def on_notebook_start(notebook):
        pid = getattr(getattr(client.km, "provisioner", None), "pid", None)
        emit(event="kernel", pid=pid)

    client = NotebookClient(
        nb,
        timeout=max(1, int(round(cell_timeout))),
        kernel_name="python3",
        allow_errors=True,
        interrupt_on_timeout=True,
        error_on_timeout={"ename": "CellTimeoutError",
                          "evalue": f"the cell ran longer than {cell_timeout:g} s and was "
                                    "interrupted",
                          "traceback": []},
        raise_on_iopub_timeout=False,
        iopub_timeout=10,
        startup_timeout=120,
        record_timing=False,
        on_cell_executed=on_cell_executed,
        on_notebook_start=on_notebook_start,
        resources={"metadata": {"path": "."}},
    )
    code = 0
    try:
        client.execute()
        emit(event="done")
    except DeadKernelError as e:
        emit(event="dead", error=f"the kernel died: {e}")
        code = 2
    except Exception as e:  # noqa: BLE001 -- report anything, the parent grades what it has
        emit(event="dead", error=f"{type(e).__name__}: {e}")
        code = 3
    finally:
        if executed_path:
            try:
                nbformat.write(nb, executed_path)
            except Exception:  # noqa: BLE001
                pass
        out.close()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
