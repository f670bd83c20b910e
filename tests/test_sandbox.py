"""The autograder's sandbox shows the Python environment that runs it, wherever it lives.

A virtual environment cannot be moved (its scripts and configuration hold absolute paths), so
the sandbox must show it at its own path: under ``/tmp`` (where ``mktemp -d`` puts a clone),
under ``/dev/shm``, in a folder whose name holds a space, or inside the folder the sandbox
would otherwise use as its home. The tests that run something do it from a small virtual
environment made here (the standard library's ``venv``, without pip), in which a fresh
interpreter loads the grader's sandbox module from this repository and starts a sandboxed
command: the command must run from that environment, as uid 65534, with its own writable
home and working folder, and the environment read-only. Where a folder cannot be shown, or
the interpreter is missing from the sandbox, the reason must name the folder or the
interpreter, not bubblewrap.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

import pytest

from attnclust.assignments import grading, sandbox

SANDBOX_PY = Path(sandbox.__file__).resolve()

CHILD = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("sandbox_under_test", sys.argv[1])
sandbox = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = sandbox
spec.loader.exec_module(sandbox)
if sys.argv[2]:
    sandbox.SCRATCH = sys.argv[2]
proc = sandbox.start([sys.executable, "-c", sys.argv[3]])
out, err = proc.communicate(timeout=120)
sandbox.release(proc)
print(json.dumps({"rc": proc.returncode, "out": out.decode(), "err": err.decode()}))
"""
"""Run by the small environment's interpreter: start ``argv[3]`` (Python code) in a sandbox
made by ``argv[1]`` (this repository's sandbox.py), with ``SCRATCH`` set to ``argv[2]``
when given."""

INNER = r"""
import json, os, sys, tinymod
open("written", "w").write("x")
os.makedirs(os.environ["HOME"])
open(os.path.join(os.environ["HOME"], "h"), "w").write("x")
try:
    open(os.path.join(sys.prefix, "new"), "w")
    env_writable = True
except OSError:
    env_writable = False
print(json.dumps({"prefix": sys.prefix, "uid": os.getuid(), "cwd": os.getcwd(),
                  "home": os.environ["HOME"], "tinymod": tinymod.__file__,
                  "env_writable": env_writable}))
"""
"""The sandboxed command: imports a module of the small environment's site-packages, writes
in its working folder and home, tries to write into the environment."""


def small_environment(folder: Path, copies: bool) -> Path:
    """A virtual environment at ``folder`` (no pip), with a module ``tinymod`` in its
    site-packages; return its interpreter."""
    venv.EnvBuilder(symlinks=not copies, with_pip=False).create(folder)
    python = folder / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True, check=True,
                             timeout=60).stdout.strip()
    (Path(purelib) / "tinymod.py").write_text("WHERE = __file__\n")
    return python


@pytest.fixture
def elsewhere(request):
    """A fresh folder under ``request.param`` (``/tmp`` or ``/dev/shm``), removed after."""
    with tempfile.TemporaryDirectory(dir=request.param, prefix="attnclust-sandbox-test-") as d:
        yield Path(d)


@pytest.mark.integration
@pytest.mark.parametrize("elsewhere, name, copies, in_scratch", [
    ("/tmp", "env", False, False),
    ("/tmp", "a course env", True, False),
    ("/dev/shm", "a course env", False, False),
    ("/tmp", "env", False, True),
], indirect=["elsewhere"])
def test_a_sandboxed_command_runs_from_an_environment_in_a_folder_the_sandbox_mounts(
        elsewhere, name, copies, in_scratch):
    python = small_environment(elsewhere / name, copies)
    scratch = str(elsewhere) if in_scratch else ""  # the sandbox's home folder holds the env
    done = subprocess.run([python, "-c", CHILD, str(SANDBOX_PY), scratch, INNER],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["rc"] == 0, result["err"]
    seen = json.loads(result["out"])
    assert seen["prefix"] == str(elsewhere / name)
    assert seen["tinymod"].startswith(str(elsewhere / name) + "/")
    assert seen["uid"] == sandbox.SANDBOX_UID
    assert not seen["env_writable"]
    expected = f"{elsewhere}-1" if in_scratch else sandbox.SCRATCH
    assert seen["cwd"] == expected and seen["home"] == f"{expected}/home"


@pytest.fixture
def fresh_probe():
    """:func:`sandbox.probe` recomputed in the test and after it (it is cached)."""
    sandbox.probe.cache_clear()
    yield
    sandbox.probe.cache_clear()


@pytest.mark.parametrize("folder, why", [
    ("/tmp", "it holds /tmp, which the sandbox replaces with its own"),
    ("/", "it holds /tmp, which the sandbox replaces with its own"),
    ("/proc/1", "it is in /proc"),  # the same name in every xdist worker
])
def test_an_environment_the_sandbox_cannot_show_is_refused_with_its_folder(
        folder, why, monkeypatch, fresh_probe):
    monkeypatch.setattr(sandbox, "_package_dir", lambda: Path(folder))
    expected = f"the sandbox cannot show {folder}, a folder of the Python environment"
    with pytest.raises(sandbox.SandboxUnavailable) as refused:
        sandbox.start([sys.executable, "-c", "pass"])
    assert expected in str(refused.value) and why in str(refused.value)
    assert "another folder" in str(refused.value)
    reason = sandbox.probe()
    assert expected in reason and why in reason
    with pytest.raises(sandbox.SandboxUnavailable) as graded:
        grading.require_sandbox()
    assert expected in str(graded.value) and "bubblewrap" not in str(graded.value)


@pytest.mark.integration
def test_a_missing_interpreter_is_named_not_bubblewrap(monkeypatch, fresh_probe):
    """The sandbox made without the environment's own prefix (as a sandbox that hid it
    would be): the probe names the interpreter and what the sandbox shows."""
    shown = [p for p in sandbox.environment_paths() if p != Path(sys.prefix).resolve()]
    assert len(shown) < len(sandbox.environment_paths())
    monkeypatch.setattr(sandbox, "environment_paths", lambda hidden=(): shown)
    reason = sandbox.probe()
    assert reason is not None and reason.startswith(
        f"the interpreter {sys.executable} does not run inside the sandbox"), reason
    assert all(str(p) in reason for p in shown) and "bubblewrap" not in reason
    with pytest.raises(sandbox.SandboxUnavailable) as graded:
        grading.require_sandbox()
    assert "bubblewrap" not in str(graded.value) and "--unsafe" in str(graded.value)


def test_a_folder_others_may_not_pass_is_found(tmp_path):
    """What a root grader's probe reports when uid 65534 may not reach the interpreter."""
    top = tmp_path / "env"
    (top / "a" / "bin").mkdir(parents=True)
    exe = top / "a" / "bin" / "python"
    exe.write_text("")
    for path in (top, top / "a", top / "a" / "bin"):
        path.chmod(0o755)
    exe.chmod(0o755)
    assert sandbox._denied(exe, [top]) is None
    (top / "a").chmod(0o700)
    assert sandbox._denied(exe, [top]) == top / "a"
    (top / "a").chmod(0o755)
    exe.chmod(0o750)
    assert sandbox._denied(exe, [top]) == exe
    exe.chmod(0o755)
    top.chmod(0o711)  # others may pass but not list the environment's folder
    assert sandbox._denied(exe, [top]) == top
    top.chmod(0o755)
    link = top / "link"
    link.symlink_to(exe)
    (top / "a" / "bin").chmod(0o700)  # the link's target is out of reach
    assert sandbox._denied(link, [top]) == top / "a" / "bin"


@pytest.mark.integration
def test_each_sandbox_gets_its_own_cpu_share():
    """Each sandbox (every submission's, and the checker's) runs in a CPU cgroup of its own,
    so the scheduler shares the processors equally between sandboxes; without it each
    session (``setsid``) is a scheduling group of its own, and a submission that starts
    hundreds of sessions starves the others past their time limits. The sandbox's processes
    are in its cgroup from the start (bubblewrap itself is), and the cgroups go with it."""
    own = sandbox._own_cgroup("cpu")
    if own is None or own[1] != 1 or os.geteuid() != 0:
        pytest.skip("needs root and cgroup v1's cpu hierarchy (on cgroup v2 the memory "
                    "cgroup carries the cpu controller where it is delegated)")
    code = "import sys, time; print('up', flush=True); time.sleep(60)"
    procs = [sandbox.start([sys.executable, "-c", code]) for _ in range(2)]
    folders = [proc.attnclust_cpu_cgroup for proc in procs]
    try:
        for proc, folder in zip(procs, folders):
            assert proc.stdout.readline().strip() == b"up"
            members = {int(pid) for pid in (folder / "cgroup.procs").read_text().split()}
            assert proc.pid in members and len(members) >= 2  # bubblewrap and the program
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate(timeout=60)
            sandbox.release(proc)
    assert folders[0] != folders[1] and all("attnclust-sandbox-" in f.name for f in folders)
    assert not any(f.exists() for f in folders)


def test_cgroups_left_by_an_ended_grader_are_removed(tmp_path):
    """A grader killed before it removed its sandboxes' cgroups leaves them behind; the next
    grader removes the empty ones whose grader has ended, and leaves those of a live grader
    (its own included) and any that still holds something."""
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True).stdout.strip()
    for name in (f"attnclust-sandbox-{ended}-1", f"attnclust-sandbox-{os.getpid()}-1",
                 f"attnclust-sandbox-{ended}-2", "attnclust-sandbox-x-1", "other"):
        (tmp_path / name).mkdir()
    (tmp_path / f"attnclust-sandbox-{ended}-2" / "held").mkdir()
    sandbox._reap(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([
        f"attnclust-sandbox-{ended}-2", f"attnclust-sandbox-{os.getpid()}-1",
        "attnclust-sandbox-x-1", "other"])
