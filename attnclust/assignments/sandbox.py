"""Run a command in a bubblewrap sandbox (chapter "For instructors", section "Safety").

The grader runs every submitted notebook, and the checks, in a sandbox made by
`bubblewrap <https://github.com/containers/bubblewrap>`_ (``bwrap``, Debian package
``bubblewrap``) from the kernel's own user, PID, mount, network, IPC and UTS namespaces:

* the file system is a fresh tmpfs holding only the Python environment (read-only): the
  interpreter's prefix, the site-packages, the ``attnclust`` package, ``/usr`` and a few files
  of ``/etc``; ``/tmp`` (the home and working folder) is a size-limited tmpfs that vanishes
  with the sandbox. The course material, the solutions, the other submissions and the
  grades are not in it;
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
  ``RLIMIT_NPROC`` per user namespace), file size, open files, no core dumps.

The sandboxed program talks to the grader only through its standard input, output and
error (pipes): no file is shared. :func:`probe` says whether a sandbox can be made on this
machine, and why not.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["Limits", "SandboxUnavailable", "environment_paths", "probe", "start"]

SANDBOX_UID = 65534
"""The uid (and gid) that sandboxed programs run as: ``nobody`` on Debian."""

HOME = "/tmp/home"
"""Home folder inside the sandbox (on its /tmp tmpfs)."""

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
        memory_bytes: address space of each process (``RLIMIT_AS``); a 2 GB array fits in
            the default of 8 GiB, and JAX needs about 2 GiB of address space.
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


def _package_dir() -> Path:
    return Path(__file__).resolve().parents[1]


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def environment_paths(hidden: Sequence[str | Path] = ()) -> list[Path]:
    """Folders of the running Python environment that the sandbox binds read-only: the
    interpreter's prefixes, the site-packages (the user's too, when Python reads it) and
    the ``attnclust`` package itself (which an editable install imports from the
    repository, of which nothing else is bound).

    Raises:
        SandboxUnavailable: one of these folders holds one of ``hidden`` (the book's
            sources, the submissions, the grades), which the sandbox would then show.
    """
    wanted = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              *site.getsitepackages(), _package_dir()]
    if site.ENABLE_USER_SITE and site.getusersitepackages() in sys.path:
        wanted.append(site.getusersitepackages())
    keep = sorted({Path(p).resolve() for p in wanted if os.path.isdir(p)},
                  key=lambda p: (len(p.parts), str(p)))
    keep = [p for i, p in enumerate(keep)
            if not any(_inside(p, q) for q in keep[:i]) and not _inside(p, Path("/usr"))]
    for h in hidden:
        for path in keep:
            if _inside(Path(h).resolve(), path):
                raise SandboxUnavailable(f"{h} is inside the Python environment ({path}), "
                                         "which every sandbox sees: move it elsewhere")
    return keep


def _bwrap_args(env_paths: list[Path], limits: Limits, root: bool, info_fd: int | None,
                block_fd: int | None) -> list[str]:
    args = ["bwrap", "--unshare-all", "--unshare-user", "--die-with-parent", "--new-session"]
    if root:  # the grader writes the uid map (65534 -> host 65534) and disables nesting
        args += ["--userns-block-fd", str(block_fd), "--info-fd", str(info_fd)]
    else:
        args += ["--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in TOP_LINKS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    made: set[Path] = {Path("/"), Path("/usr")}
    for path in env_paths:
        for parent in reversed(path.parents):
            if parent not in made:
                args += ["--perms", "0755", "--dir", str(parent)]
                made.add(parent)
        args += ["--ro-bind", str(path), str(path)]
        made.add(path)
    args += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(64 << 20), "--tmpfs", "/dev/shm",
             "--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp",
             "--chdir", "/tmp", "--clearenv"]
    env = {"HOME": HOME, "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8",
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
        SandboxUnavailable: bwrap is missing or could not set the sandbox up.
    """
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
    args = _bwrap_args(environment_paths(hidden), limits, root, info_w, block_r) + list(argv)
    try:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, pass_fds=pass_fds)
    finally:
        for fd in (info_w, block_r):
            if fd is not None:
                os.close(fd)
    if root:
        try:
            _write_id_maps(info_r, block_w)
        except (OSError, subprocess.SubprocessError, SandboxUnavailable) as e:
            proc.kill()
            _, err = proc.communicate()
            detail = (err or b"").decode(errors="replace").strip().splitlines()
            raise SandboxUnavailable(detail[-1] if detail else str(e)) from e
        finally:
            os.close(block_w)
    return proc


PROBE_CODE = ("import nbformat, nbclient, ipykernel, attnclust.assignments, os; "
              "print(os.getuid(), flush=True)")


@functools.lru_cache(maxsize=None)
def probe() -> str | None:
    """``None`` when a sandbox can be made here and runs the environment's Python with the
    grader's modules; otherwise the reason, in one line (cached for the process)."""
    if not sys.platform.startswith("linux"):
        return f"sandboxes need Linux namespaces (this is {sys.platform})"
    try:
        proc = start([sys.executable, "-c", PROBE_CODE])
        out, err = proc.communicate(timeout=120)
    except SandboxUnavailable as e:
        return str(e)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return "the sandbox did not start within 120 s"
    if proc.returncode == 0 and out.strip() == str(SANDBOX_UID).encode():
        return None
    lines = err.decode(errors="replace").strip().splitlines()
    why = lines[-1] if lines else f"exit status {proc.returncode}"
    if why.startswith("bwrap:"):
        return f"bubblewrap could not create the sandbox ({why})"
    return f"the Python environment does not run inside the sandbox ({why})"
