"""Shared fixtures: fixed PRNG keys and the book's default mixture.

Every random test draws from a key derived here, so every run sees the same arrays.
Test files run in the order of their number of ``slow`` and ``integration`` tests (most
first).

The jaxtyping annotations of the library are checked in every test: jaxtyping's import
hook decorates each function and dataclass of ``attnclust`` with
``jaxtyped(typechecker=beartype)`` when it is imported (``pytest_configure``, before any
test module imports the package), so a call whose arguments or result disagree with its
annotated types or shapes fails with a ``TypeCheckError``. A test that passes wrong input on
purpose, to test the library's own ValueError/TypeError messages, uses the fixture
``typecheck_off`` (``@pytest.mark.usefixtures("typecheck_off")``), which switches the
checker off while it runs. ``ATTNCLUST_TYPECHECK=0`` runs without the hook (slightly
faster, for a quick loop).

Each test carries at most one of the three markers (pyproject.toml), which put it in
exactly one of the Makefile's targets: none (``make quick`` and ``make unit``), ``slow``
(``make unit`` only), ``integration`` (``make integration``), ``browser`` (``make browser``;
every test in tests/browser/ and no other). ``pytest_collection_modifyitems`` enforces it.
"""

import ast
import importlib
import importlib.util
import os
from collections import Counter
from pathlib import Path

# JAX's and XLA's settings (the compilation cache the book's kernels share, LLVM's
# optimisation level 1) come from scripts/jax_env.py, their one place: set here before JAX
# is imported (JAX reads them then), in every pytest process, and inherited by the
# subprocesses the tests start.
_spec = importlib.util.spec_from_file_location("jax_env", Path(__file__).resolve().parents[1] / "scripts" / "jax_env.py")
jax_env = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(jax_env)
jax_env.configure(os.environ, fast_compile=True)
# Truncated entries of the compilation cache (a process killed mid-write) would make every
# later read of them warn: deleted once per run, in pytest's main process (before xdist
# starts its workers, which then write).
if "PYTEST_XDIST_WORKER" not in os.environ:
    jax_env.repair(os.environ)

import pytest
from jaxtyping import config as jaxtyping_config

TYPECHECK = os.environ.get("ATTNCLUST_TYPECHECK", "1") != "0"
PACKAGE = Path(__file__).resolve().parents[1] / "attnclust"


def third_party_imports(package: Path = PACKAGE) -> list[str]:
    """The modules outside the package that its modules import at their top level."""
    names = set()
    for path in package.rglob("*.py"):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module)
    return sorted(name for name in names if name.partition(".")[0] not in ("attnclust", "__future__"))


def pytest_configure(config):
    """Install the type checker's import hook, then import the package (in each process
    that runs tests; an xdist controller, which only hands out files, imports neither).

    The third-party modules the package imports are imported first, without the hook: while
    the hook executes a module of ``attnclust`` it swaps the name of the bytecode cache file
    for every module imported meanwhile, so scipy, scikit-learn, optax, matplotlib and the
    checker itself would otherwise be compiled from source in every process (about 1,400
    modules; the cache cannot be written where ``PYTHONDONTWRITEBYTECODE`` is set)."""
    if getattr(config.option, "numprocesses", None) and "PYTEST_XDIST_WORKER" not in os.environ:
        return
    for name in third_party_imports():
        try:
            importlib.import_module(name)
        except ImportError:  # an optional dependency (an extra) that is not installed
            pass
    if TYPECHECK:
        from jaxtyping import install_import_hook

        # ``float`` accepts an int as PEP 484 says (the numeric tower); beartype's default
        # is stricter than the annotations mean.
        install_import_hook("attnclust", "beartype.beartype(conf=beartype.BeartypeConf(is_pep484_tower=True))")
    import attnclust

    # The fields of GaussianMixture are annotated with what it stores (float32 arrays), but
    # JAX rebuilds the pytree from whatever leaves a transformation holds (tracers, the
    # shape structs of jax.eval_shape, the ints and None of a vmap in_axes prefix), so its
    # __init__ takes any leaf: the checker skips __init__ (jaxtyping reads
    # __no_type_check__ at call time), and __post_init__ validates what a user passes.
    attnclust.GaussianMixture.__init__.__no_type_check__ = True





@pytest.fixture
def typecheck_off():
    """The type checker off while the test runs: for a test that passes wrong types or shapes
    on purpose, to reach the library's own errors."""
    jaxtyping_config.update("jaxtyping_disable", True)
    try:
        yield
    finally:
        jaxtyping_config.update("jaxtyping_disable", False)


@pytest.fixture
def key():
    import jax

    return jax.random.PRNGKey(20251201)


@pytest.fixture
def mixture():
    """The default mixture of the book (``attnclust.DEFAULT``)."""
    import attnclust as ac

    return ac.orthogonal_mixture(**ac.DEFAULT.mixture_args())

from hypothesis import settings

# Property tests are derandomised (same examples every run) and have no deadline: the first
# call of a jitted function compiles, which is slow but not a failure.
settings.register_profile("attnclust", derandomize=True, deadline=None, max_examples=25)
settings.load_profile("attnclust")


MARKERS = ("slow", "integration", "browser")
"""The markers of pyproject.toml; a test carries at most one of them."""
BROWSER_DIR = Path(__file__).resolve().parent / "browser"


def marker_problems(items) -> list[str]:
    """Why tests are not each in exactly one of unit, integration and browser: a test with
    two of the markers, a test in tests/browser/ not marked ``browser`` (make unit would run
    it) and a test marked ``browser`` outside it (make browser, which collects tests/browser/
    only, would not)."""
    problems = []
    for item in items:
        marks = [m for m in MARKERS if item.get_closest_marker(m)]
        in_browser_dir = BROWSER_DIR in Path(item.path).parents
        if len(marks) > 1:
            problems.append(f"{item.nodeid}: marked {' and '.join(marks)} (at most one of {', '.join(MARKERS)})")
        if in_browser_dir != ("browser" in marks):
            problems.append(f"{item.nodeid}: " + ("in tests/browser/ but not marked browser" if in_browser_dir
                                                  else "marked browser outside tests/browser/"))
    return problems


def pytest_collection_modifyitems(config, items):
    """Files with the most ``slow`` or ``integration`` tests first, each file's tests in
    their own order: ``make unit`` and ``make integration`` hand whole files to their workers
    (pytest-xdist, ``--dist loadfile``) in this order, so the long files start early rather
    than end the run on one worker while the other idles. A test that breaks the rule of the
    markers (``marker_problems``) is a collection error."""
    problems = marker_problems(items)
    if problems:
        raise pytest.UsageError("test markers:\n  " + "\n  ".join(problems))
    long = Counter(item.path for item in items
                   if item.get_closest_marker("slow") or item.get_closest_marker("integration"))
    first = {path: i for i, path in enumerate(dict.fromkeys(item.path for item in items))}
    items.sort(key=lambda item: (-long[item.path], first[item.path]))
