"""Run a command in a bubblewrap sandbox (the appendix "Grading with the course editions",
section "The sandbox").

The grader runs every submitted notebook, and the checks, in a sandbox made by
`bubblewrap <https://github.com/containers/bubblewrap>`_ (``bwrap``, Debian package
``bubblewrap``) from the kernel's own user, PID, mount, network, IPC and UTS namespaces:

* the file system is a fresh tmpfs holding only the Python environment (read-only): the
  interpreter's prefixes and its own folder, the site-packages, the ``attnclust`` package,
  ``/usr`` and a few files of ``/etc``; ``/tmp`` is a size-limited tmpfs that vanishes with
  the sandbox, and the home and working folder are in it (:data:`SCRATCH`). The course
  material, the solutions, the other submissions and the grades are not in it;
* a new PID namespace: the grader's processes are invisible, and when the sandbox's first
  process ends (or the grader kills it, or the grader itself dies) the kernel kills every
  process started inside, however it was started (``setsid``, double fork);
* a new network namespace with only a loopback interface: no network;
* an unprivileged user: uid 65534 inside, with no capabilities and ``no_new_privs``. When the
  grader runs as root, the sandbox's processes run as host uid 65534 too (the grader writes
  the user namespace's uid map itself, through bubblewrap's ``--userns-block-fd``); nested
  user namespaces are disabled;
* resource limits (:class:`Limits`), set by the sandboxed program before it runs anything
  else: address space per process, processes and threads (counted per sandbox: Linux counts
  ``RLIMIT_NPROC`` per user namespace), file size, open files, no core dumps;
* a memory cgroup of its own (:func:`memory_cgroups`), when the grader may make one (as
  root, or in a cgroup delegated to its user): the memory of the whole sandbox, every
  process, ``/tmp``, ``/dev/shm`` and ``memfd`` pages included, which no per-process limit
  counts. bubblewrap is started by a shell that first moves itself into the cgroup, so that
  nothing of the sandbox ever runs outside it. Where none can be made, only each process's
  address space is limited (:func:`memory_cgroups` says why);
* a CPU cgroup of its own beside it, where the grader may make one: the kernel's scheduler
  then shares the processors equally between the sandboxes (and the checker's), however many
  processes or sessions one of them starts. Without it, the scheduler's autogroups give each
  session (``setsid``) an equal share, so a submission that starts hundreds of sessions takes
  nearly all the processors and another submission runs past its time limit.

The Python environment is shown at its own path wherever it lives (a virtual environment
keeps absolute paths in its scripts and configuration, so it cannot be moved), ``/tmp`` and
``/dev/shm`` included, and in folders whose names hold spaces (bubblewrap takes each path as
one argument). bubblewrap applies its arguments in order, and a mount hides whatever an
earlier one put at or below its path, so the sandbox's own mounts (``/proc``, ``/dev``,
``/dev/shm``, ``/tmp``) come first and the environment's folders are bound after them, on
top. The home and working folder then cannot be inside a folder of the environment (which is
read-only there): they are ``SCRATCH``, or ``SCRATCH-1``, ``SCRATCH-2``, ... when the
environment lives in it. What cannot be shown is refused before the sandbox is made, with
the folder and the reason (:class:`SandboxUnavailable`): a folder of the environment that
holds ``/tmp``, ``/dev/shm``, ``/dev`` or ``/proc`` (the whole root, say), which would cover
the sandbox's own, and one inside ``/proc``, the sandbox's own process file system.

The sandboxed program talks to the grader only through its standard input, output and
error (pipes): no file is shared. :func:`probe` says whether a sandbox can be made on this
machine, and why not: bubblewrap or the kernel (namespaces), an environment that cannot be
shown, or one that uid 65534 may not read (when grading as root; judged by the permission
bits for others).
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shutil
import site
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Limits", "SandboxUnavailable", "environment_paths", "memory_cgroups",
           "out_of_memory", "probe", "release", "start"]

SANDBOX_UID = 65534
"""The uid (and gid) that sandboxed programs run as: ``nobody`` on Debian."""

SCRATCH = "/tmp/sandbox"
"""The folder of the sandbox's /tmp that holds its home (``home``) and is its working folder,
where the grader's programs make theirs; ``-1``, ``-2``, ... is appended when the Python
environment lives in it."""

OWN_MOUNTS = ("/tmp", "/dev/shm", "/dev", "/proc")
"""Where the sandbox mounts file systems of its own, before it binds the environment; a
folder of the environment that holds one of them cannot be bound (it would cover it)."""

ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "nsswitch.conf",
             "passwd", "group", "hosts", "host.conf", "mime.types", "fonts", "alternatives",
             "os-release")
"""What the sandbox sees of /etc (read-only): the dynamic linker's cache, names of users
and groups, time zone, fonts, the alternatives' symbolic links."""

TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Top-level folders that Debian makes symbolic links into /usr (bound read-only when they
are real folders)."""

PASS_ENV = ("JAX_", "XLA_", "OMP_", "MKL_", "OPENBLAS_", "TF_CPP_", "LANG", "LC_", "TZ")
"""Prefixes of the grader's environment variables that the sandbox keeps (threading and
accelerator settings, locale); every other variable is cleared."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandbox (each a POSIX ``setrlimit`` but ``tmp_bytes``).

    Attributes:
        memory_bytes: address space of each process (``RLIMIT_AS``), and the memory of the
            whole sandbox where a memory cgroup can be made (:func:`memory_cgroups`); a 2 GB
            array fits in the default of 8 GiB, and JAX needs about 2 GiB of address space.
        processes: processes and threads of the sandbox (``RLIMIT_NPROC``), enough for JAX's
            thread pools on a large machine.
        file_bytes: size of any file written (``RLIMIT_FSIZE``).
        open_files: open file descriptors per process (``RLIMIT_NOFILE``).
        tmp_bytes: size of the sandbox's /tmp (memory-backed), its home and working folder.
    """

    memory_bytes: int = 8 << 30
    processes: int = max(1024, 16 * (os.cpu_count() or 1))
    file_bytes: int = 1 << 30
    open_files: int = 4096
    tmp_bytes: int = 1 << 30

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Limits.{name} must be a positive int, got {value!r}")

    def rlimits(self) -> dict[str, int]:
        """The limits as ``{RLIMIT name: value}``, which the sandboxed program sets on
        itself first."""
        return {"RLIMIT_AS": self.memory_bytes, "RLIMIT_NPROC": self.processes,
                "RLIMIT_FSIZE": self.file_bytes, "RLIMIT_NOFILE": self.open_files,
                "RLIMIT_CORE": 0}


class SandboxUnavailable(RuntimeError):
    """No sandbox can be made on this machine; the message says why."""


CGROUP_ROOT = Path("/sys/fs/cgroup")
"""Where Linux mounts the control groups."""


def _own_cgroup(controller: str = "memory") -> tuple[Path, int] | None:
    """The folder of this process's cgroup of ``controller`` ("memory" or "cpu") and the
    cgroup version (1 or 2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return CGROUP_ROOT / controllers / path.lstrip("/"), 1
    if (CGROUP_ROOT / "cgroup.controllers").is_file():
        path = next((ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")), None)
        if path is not None:
            return CGROUP_ROOT / path.lstrip("/"), 2
    return None


def _make_cgroup(limit_bytes: int) -> Path:
    """A new memory cgroup below this process's, limited to ``limit_bytes`` (swap included).

    Raises:
        OSError: none can be made here (the message says why).
    """
    own = _own_cgroup("memory")
    if own is None:
        raise OSError("this kernel has no memory cgroup for the grader's process")
    parent, version = own
    if version == 2 and "memory" not in (parent / "cgroup.subtree_control").read_text().split():
        raise OSError(f"the memory controller is not enabled below {parent}")
    folder = _new_folder(parent)
    folder.mkdir()
    try:
        if version == 1:
            (folder / "memory.limit_in_bytes").write_text(str(limit_bytes))
            try:  # with swap accounting on, swap counts against the same limit
                (folder / "memory.memsw.limit_in_bytes").write_text(str(limit_bytes))
            except OSError:
                pass
        else:
            (folder / "memory.max").write_text(str(limit_bytes))
            (folder / "memory.swap.max").write_text("0")
    except OSError:
        folder.rmdir()
        raise
    return folder


_REAPED: set[Path] = set()
"""The cgroup folders :func:`_reap` has cleared in this process (once each is enough: what
it removes was left by graders that ended before this one started)."""


def _new_folder(parent: Path) -> Path:
    """The path of this process's next sandbox cgroup under ``parent``
    (``attnclust-sandbox-<pid>-<n>``), after clearing the ones ended graders left there."""
    if parent not in _REAPED:
        _reap(parent)
        _REAPED.add(parent)
    return parent / f"attnclust-sandbox-{os.getpid()}-{next(_CGROUP_COUNT)}"


def _reap(parent: Path) -> None:
    """Remove the empty sandbox cgroups under ``parent`` left by grader processes that have
    ended (one killed before it could remove them); a cgroup that still holds a process, or
    whose grader still runs, is left alone."""
    for folder in parent.glob("attnclust-sandbox-*-*"):
        pid = folder.name.split("-")[2]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue  # its grader is alive
        except ProcessLookupError:
            pass
        except OSError:
            continue
        try:
            folder.rmdir()
        except OSError:
            pass


def _make_cpu_cgroup() -> Path | None:
    """A new CPU cgroup below this process's in cgroup v1's ``cpu`` hierarchy, with the
    default weight: sibling sandboxes get equal shares of the processors. ``None`` where none
    can be made, and on cgroup v2 (there the memory cgroup carries the cpu controller where
    it is delegated: :func:`_enable_cpu_v2`)."""
    own = _own_cgroup("cpu")
    if own is None or own[1] != 1:
        return None
    folder = _new_folder(own[0])
    try:
        folder.mkdir()
    except OSError:
        return None
    return folder


def _enable_cpu_v2(memory_folder: Path) -> bool:
    """On cgroup v2, whether the CPU controller is on for the sandbox's own cgroup (it is
    when its parent delegates it)."""
    try:
        return "cpu" in (memory_folder.parent / "cgroup.subtree_control").read_text().split()
    except OSError:
        return False


_CGROUP_COUNT = itertools.count()


@functools.lru_cache(maxsize=None)
def memory_cgroups() -> str | None:
    """``None`` when each sandbox gets a memory cgroup that limits the whole sandbox's
    memory; otherwise why not, in one line (cached for the process)."""
    try:
        folder = _make_cgroup(64 << 20)
    except OSError as e:
        return (f"no memory cgroup can be made ({e.strerror or e}): only each process's "
                "address space is limited")
    folder.rmdir()
    return None


def out_of_memory(proc: subprocess.Popen) -> bool:
    """Whether the kernel killed a process of ``proc``'s sandbox (started by :func:`start`)
    for going over its memory limit."""
    folder = getattr(proc, "attnclust_cgroup", None)
    if folder is None:
        return False
    name = "memory.oom_control" if (folder / "memory.oom_control").exists() else "memory.events"
    try:  # cgroup v1 and v2 both count the processes the kernel killed as "oom_kill N"
        counts = dict(line.split() for line in (folder / name).read_text().splitlines())
        return int(counts.get("oom_kill", 0)) > 0
    except (OSError, ValueError):
        return False


def release(proc: subprocess.Popen) -> None:
    """Remove the cgroups of ``proc``'s sandbox once it has ended (a no-op without them);
    call it after ``proc.wait()``."""
    for attr in ("attnclust_cgroup", "attnclust_cpu_cgroup"):
        folder = getattr(proc, attr, None)
        if folder is None:
            continue
        for _ in range(50):  # the kernel empties it as the sandbox's last processes exit
            try:
                folder.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.1)
        setattr(proc, attr, None)


def _package_dir() -> Path:
    return Path(__file__).resolve().parents[1]


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _unbindable(path: Path) -> str | None:
    """Why the sandbox cannot show ``path`` (a folder of the environment), or None."""
    for own in OWN_MOUNTS:
        if _inside(Path(own), path):
            return f"it holds {own}, which the sandbox replaces with its own"
    if _inside(path, Path("/proc")):
        return "it is in /proc, which the sandbox replaces with its own process file system"
    return None


def environment_paths(hidden: Sequence[str | Path] = ()) -> list[Path]:
    """Folders of the running Python environment that the sandbox binds read-only: the
    interpreter's prefixes and the folder its executable resolves to, the site-packages (the
    user's too, when Python reads it) and the ``attnclust`` package itself (which an
    editable install imports from the repository, of which nothing else is bound).

    Raises:
        SandboxUnavailable: one of these folders cannot be shown in the sandbox (it holds
            one of :data:`OWN_MOUNTS`, or is in ``/proc``), or holds one of ``hidden`` (the
            book's sources, the submissions, the grades), which the sandbox would then show.
    """
    wanted = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              os.path.dirname(os.path.realpath(sys.executable)),
              *site.getsitepackages(), _package_dir()]
    if site.ENABLE_USER_SITE and site.getusersitepackages() in sys.path:
        wanted.append(site.getusersitepackages())
    keep = sorted({Path(p).resolve() for p in wanted if p and os.path.isdir(p)},
                  key=lambda p: (len(p.parts), str(p)))
    keep = [p for i, p in enumerate(keep)
            if not any(_inside(p, q) for q in keep[:i]) and not _inside(p, Path("/usr"))]
    for path in keep:
        why = _unbindable(path)
        if why is not None:
            raise SandboxUnavailable(
                f"the sandbox cannot show {path}, a folder of the Python environment that "
                f"runs the grader: {why}. Put the environment (or the clone holding it) in "
                "another folder")
    for h in hidden:
        for path in keep:
            if _inside(Path(h).resolve(), path):
                raise SandboxUnavailable(f"{h} is inside the Python environment ({path}), "
                                         "which every sandbox sees: move it elsewhere")
    return keep


def _scratch_folder(env_paths: Sequence[Path]) -> Path:
    """The sandbox's home-and-working folder: :data:`SCRATCH`, or the first of
    ``SCRATCH-1``, ``SCRATCH-2``, ... that holds none of ``env_paths`` (the folders bound
    read-only there)."""
    n = 0
    while True:
        folder = Path(SCRATCH if n == 0 else f"{SCRATCH}-{n}")
        if not any(_inside(p, folder) for p in env_paths):
            return folder
        n += 1


def _bwrap_args(env_paths: list[Path], limits: Limits, root: bool, info_fd: int | None,
                block_fd: int | None) -> list[str]:
    args = ["bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    if root:  # the grader writes the uid map (65534 -> host 65534) and disables nesting
        args += ["--userns-block-fd", str(block_fd), "--info-fd", str(info_fd)]
    else:
        args += ["--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    # the sandbox's own mounts first: a later mount at or below a path hides what an earlier
    # one put there, so the environment's folders, bound after these, stay visible
    args += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(64 << 20), "--tmpfs", "/dev/shm",
             "--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in TOP_LINKS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    made: set[Path] = {Path("/"), Path("/usr"), *map(Path, OWN_MOUNTS)}
    for path in env_paths:
        for parent in reversed(path.parents):
            if parent not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        args += ["--ro-bind", str(path), str(path)]
        made.add(path)
    scratch = _scratch_folder(env_paths)
    args += ["--perms", "1777", "--dir", str(scratch), "--chdir", str(scratch), "--clearenv"]
    env = {"HOME": str(scratch / "home"), "USER": "student", "LOGNAME": "student",
           "LANG": "C.UTF-8",
           "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
           "PYTHONPATH": str(_package_dir().parent), "PYTHONDONTWRITEBYTECODE": "1",
           "MPLBACKEND": "Agg", "TMPDIR": "/tmp"}
    env.update({k: v for k, v in os.environ.items() if k.startswith(PASS_ENV)})
    for key, value in env.items():
        args += ["--setenv", key, value]
    args.append("--")
    if root:
        args += ["setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}",
                 "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--"]
    return args


def _write_id_maps(info_fd: int, block_fd: int) -> None:
    """Root only: map uid/gid 0 (bubblewrap's setup) and 65534 (the sandboxed program) to the
    same host ids in the sandbox's user namespace, forbid nested user namespaces in it, and
    let bubblewrap go on."""
    buf = b""
    with os.fdopen(info_fd, "rb") as info:
        while True:
            chunk = info.read1(4096)
            if not chunk:
                raise SandboxUnavailable("bwrap ended before creating its namespaces")
            buf += chunk
            try:
                pid = int(json.loads(buf)["child-pid"])
                break
            except (ValueError, KeyError):
                continue
    mapping = f"0 0 1\n{SANDBOX_UID} {SANDBOX_UID} 1\n"
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/{pid}/{name}", "w") as f:
            f.write(mapping)
    subprocess.run(["nsenter", f"--user=/proc/{pid}/ns/user", "--", "sh", "-c",
                    "echo 0 > /proc/sys/user/max_user_namespaces"], check=True,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE, timeout=30)
    os.write(block_fd, b"1")


def start(argv: list[str], *, limits: Limits = Limits(), hidden: Sequence[str | Path] = (),
          stderr=subprocess.PIPE) -> subprocess.Popen:
    """Start ``argv`` (its first item an absolute path inside the environment, e.g.
    ``sys.executable``) in a new sandbox, with pipes for its standard input and output.

    The caller passes ``limits.rlimits()`` to the program, which sets them on itself
    before anything else. Killing the returned process (bwrap)
    kills everything in the sandbox.

    Raises:
        SandboxUnavailable: a folder of the environment cannot be shown in the sandbox or
            holds one of ``hidden`` (:func:`environment_paths`), or bwrap is missing or
            could not set the sandbox up.
    """
    env_paths = environment_paths(hidden)
    if shutil.which("bwrap") is None:
        raise SandboxUnavailable("bubblewrap is not installed (Debian: apt-get install "
                                 "bubblewrap)")
    root = os.geteuid() == 0
    info_r = info_w = block_r = block_w = None
    pass_fds: tuple[int, ...] = ()
    if root:
        if shutil.which("setpriv") is None or shutil.which("nsenter") is None:
            raise SandboxUnavailable("setpriv and nsenter (util-linux) are needed when "
                                     "grading as root")
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        pass_fds = (info_w, block_r)
    args = _bwrap_args(env_paths, limits, root, info_w, block_r) + list(argv)
    cgroup = cpu = None
    if memory_cgroups() is None:
        try:
            cgroup = _make_cgroup(limits.memory_bytes)
        except OSError:
            cgroup = None
    if cgroup is None or not _enable_cpu_v2(cgroup):  # v2 with cpu delegated: the same folder
        cpu = _make_cpu_cgroup()
    joined = [g for g in (cgroup, cpu) if g is not None]
    if joined:  # the shell joins the cgroups, then becomes bubblewrap
        args = ["/bin/sh", "-c", 'n=$0; while [ "$n" -gt 0 ]; do echo $$ > "$1/cgroup.procs" '
                '|| exit 125; shift; n=$((n - 1)); done; exec "$@"', str(len(joined)),
                *map(str, joined), *args]
    try:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, pass_fds=pass_fds)
    except BaseException:
        for g in joined:
            g.rmdir()
        raise
    finally:
        for fd in (info_w, block_r):
            if fd is not None:
                os.close(fd)
    proc.attnclust_cgroup = cgroup
    proc.attnclust_cpu_cgroup = cpu
    if root:
        try:
            _write_id_maps(info_r, block_w)
        except (OSError, subprocess.SubprocessError, SandboxUnavailable) as e:
            proc.kill()
            _, err = proc.communicate()
            release(proc)
            detail = (err or b"").decode(errors="replace").strip().splitlines()
            raise SandboxUnavailable(detail[-1] if detail else str(e)) from e
        finally:
            os.close(block_w)
    return proc


def _denied(path: Path, env_paths: Sequence[Path]) -> Path | None:
    """The first folder (from the bound folder of ``env_paths`` that holds ``path`` down) or
    file on the way to ``path``, and to where it resolves, that uid 65534 may not pass or
    run by the permission bits for others (what decides when a root grader's sandboxed
    processes are host uid 65534; ACLs are not read); ``None`` when there is none."""
    for target in (path, path.resolve()):
        top = next((q for q in env_paths if _inside(target, q)), None)
        if top is None:
            continue
        for step in [top, *(a for a in reversed(target.parents) if top in a.parents), target]:
            try:
                mode = os.stat(step).st_mode
            except OSError:
                return step
            if not mode & 0o001 or (step == top and not mode & 0o004):
                return step
    return None


def _diagnose(why: str, env_paths: Sequence[Path]) -> str:
    """The probe's reason, from the last line of what the failed sandbox wrote."""
    exe = Path(sys.executable)
    if why.startswith("bwrap:") and "execvp" not in why:  # bubblewrap's own setup failed
        named = next((str(p) for p in env_paths if str(p) in why), None)
        if named is not None:
            return f"bubblewrap could not show {named} in the sandbox ({why})"
        return (f"bubblewrap could not create the sandbox ({why}): it needs user namespaces "
                "(root, or unprivileged ones allowed: sysctl kernel.unprivileged_userns_clone "
                "and user.max_user_namespaces; some containers forbid them)")
    blocked = _denied(exe, env_paths) if os.geteuid() == 0 else None
    if blocked is not None:
        st = os.stat(blocked)
        return (f"the sandbox's user (uid {SANDBOX_UID}) may not read {blocked} (mode "
                f"{st.st_mode & 0o7777:o}, owner uid {st.st_uid}), on the way to the "
                f"interpreter {exe}: make it readable by others (chmod o+rx) or grade from "
                f"an environment that is ({why})")
    if "execute" in why or "execvp" in why:  # setpriv's or bwrap's: the interpreter is missing
        shown = ", ".join(str(p) for p in env_paths)
        return (f"the interpreter {exe} does not run inside the sandbox, which shows {shown} "
                f"of the Python environment ({why})")
    return f"the Python environment does not run inside the sandbox ({why})"


PROBE_CODE = ("import nbformat, nbclient, ipykernel, attnclust.assignments, os; "
              "print(os.getuid(), flush=True)")


@functools.lru_cache(maxsize=None)
def probe() -> str | None:
    """``None`` when a sandbox can be made here and runs the environment's Python with the
    grader's modules; otherwise the reason, in one line, naming what to fix (cached for the
    process)."""
    if not sys.platform.startswith("linux"):
        return f"sandboxes need Linux namespaces (this is {sys.platform})"
    proc = None
    try:
        proc = start([sys.executable, "-c", PROBE_CODE])
        out, err = proc.communicate(timeout=120)
    except SandboxUnavailable as e:
        why = str(e)
        return _diagnose(why, environment_paths()) if why.startswith("bwrap:") else why
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return "the sandbox did not start within 120 s"
    finally:
        if proc is not None:
            release(proc)
    if proc.returncode == 0 and out.strip() == str(SANDBOX_UID).encode():
        return None
    lines = err.decode(errors="replace").strip().splitlines()
    return _diagnose(lines[-1] if lines else f"exit status {proc.returncode}",
                     environment_paths())
