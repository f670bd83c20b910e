"""attnclust.train (chapter "Training dynamics"): determinism, vmapped seeds, samplers and
several mixtures, sharding, the loss and step, validation, and the default setting's
alignment."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import attnclust as ac
from attnclust import general_mixture, train


RUN = dict(steps=40, batch=8, L=10, record_every=20, progress=False)
"""A short run: two records of 20 steps. The short runs of this file share its shapes (one
seed or two), so that XLA compiles each program once for the whole file."""


@pytest.mark.slow
def test_same_key_same_run(key, mixture):
    a = ac.fit(key, mixture, **RUN)
    b = ac.fit(key, mixture, **{**RUN, "progress": True})
    np.testing.assert_array_equal(a.theta, b.theta)  # chunking for the bar changes nothing
    np.testing.assert_array_equal(a.risk, b.risk)
    assert a.thetas.shape == (2, 2, 5) and a.risk.shape == (2,)
    np.testing.assert_array_equal(a.steps, [20, 40])
    np.testing.assert_array_equal(a.thetas[-1], a.theta)


@pytest.mark.slow
def test_fit_many_equals_separate_fits(key, mixture):
    keys = jax.random.split(key, 2)
    many = ac.fit_many(keys, mixture, **RUN)
    for i in (0, 1):
        one = ac.fit(keys[i], mixture, **RUN)
        np.testing.assert_allclose(many.theta[i], one.theta, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(many.risk[i], one.risk, rtol=1e-5)


@pytest.mark.slow
def test_fit_many_sweeps_lam(key, mixture):
    keys = jax.random.split(key, 2)
    lams = jnp.array([0.5, 2.0])
    many = ac.fit_many(keys, mixture, lam=lams, **RUN)
    one = ac.fit(keys[1], mixture, lam=2.0, **RUN)
    np.testing.assert_allclose(many.theta[1], one.theta, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("init", ac.INITS)
def test_initialisations(key, mixture, init):
    theta = ac.init_theta(key, mixture, init=init)
    assert theta.shape == (2, 5)
    norms = np.linalg.norm(theta, axis=-1)
    if init == "small":
        assert norms.max() < 0.1
    if init == "large":
        assert norms.min() > 1.0
    if init == "near":
        assert ac.alignment(theta, mixture.centroids).min() > 0.9
    if init == "close":
        cos = abs(float(theta[0] @ theta[1])) / (norms[0] * norms[1])
        assert cos > 0.9


@pytest.mark.slow
def test_training_lowers_risk(key, mixture):
    r = ac.fit(key, mixture, steps=300, batch=16, L=20, record_every=100, progress=False)
    assert r.risk[-1] < 0.7 * r.risk[0]
    assert r.alignment(mixture.centroids).shape == (3, 2)


@pytest.mark.slow
def test_typed_and_raw_keys_give_the_same_run(mixture):
    """jax.random.key and jax.random.PRNGKey of one seed give bit-identical runs."""
    a = ac.fit(jax.random.key(3), mixture, **RUN)
    b = ac.fit(jax.random.PRNGKey(3), mixture, **RUN)
    np.testing.assert_array_equal(a.thetas, b.thetas)
    np.testing.assert_array_equal(a.risk, b.risk)
    typed, raw = jax.random.split(jax.random.key(4), 2), jax.random.split(jax.random.PRNGKey(4), 2)
    np.testing.assert_array_equal(ac.fit_many(typed, mixture, **RUN).theta,
                                  ac.fit_many(raw, mixture, **RUN).theta)
    theta0 = np.full((2, 5), 0.1)
    np.testing.assert_array_equal(
        ac.fit_sampler(typed, ac.draw_from_mixture, mixture, init=theta0, **RUN).theta,
        ac.fit_sampler(raw, ac.draw_from_mixture, mixture, init=theta0, **RUN).theta)
    np.testing.assert_array_equal(ac.init_theta(jax.random.key(5), mixture),
                                  ac.init_theta(jax.random.PRNGKey(5), mixture))


def test_settings_are_keyword_only(key, mixture):
    with pytest.raises(TypeError):
        ac.fit(key, mixture, 1.0)
    with pytest.raises(TypeError):
        ac.fit_many(jax.random.split(key, 2), mixture, 1.0)
    with pytest.raises(TypeError):
        ac.fit_sampler(jax.random.split(key, 2), ac.draw_from_mixture, mixture, np.ones((2, 5)))
    with pytest.raises(TypeError):
        ac.init_theta(key, mixture, 2)


@pytest.mark.slow
def test_fit_sampler_trains_as_fit_many(key, mixture):
    """fit_many(keys) from given heads is fit_sampler on draw_from_mixture with the second
    half of each seed's key (the first half draws the initial heads)."""
    keys = jax.random.split(key, 2)
    theta0 = np.asarray(ac.init_theta(key, mixture))
    many = ac.fit_many(keys, mixture, init=theta0, **RUN)
    run_keys = jax.vmap(jax.random.split)(keys)[:, 1]
    sampled = ac.fit_sampler(run_keys, ac.draw_from_mixture, mixture, init=theta0, **RUN)
    np.testing.assert_array_equal(sampled.thetas, many.thetas)
    np.testing.assert_array_equal(sampled.risk, many.risk)
    assert sampled.n_records == 2


@pytest.mark.slow
def test_fit_sampler_lowers_risk_with_data_per_seed(key):
    """Two seeds, each drawing rows of its own data set (digits.sample_rows is a sampler)."""
    from attnclust.digits import sample_rows

    rows = np.stack([2 * np.eye(2, 5), -2 * np.eye(2, 5)]).repeat(50, axis=1)  # (S=2, 100, d=5)
    rows += 0.3 * np.asarray(jax.random.normal(key, rows.shape))
    res = ac.fit_sampler(jax.random.split(key, 2), sample_rows, jnp.asarray(rows, jnp.float32),
                         init=0.01 * np.ones((2, 2, 5)), steps=200, batch=8, L=30, record_every=10,
                         progress=False, data_per_seed=True)
    assert res.theta.shape == (2, 2, 5) and res.risk.shape == (2, 20)
    assert np.all(res.risk[:, -1] < 0.75 * res.risk[:, 0])


@pytest.mark.slow
def test_fit_mixtures(key, mixture):
    """One run per mixture (K = 2, 4 and 2, padded to 4), H = the largest K by default."""
    mixes = [mixture, ac.plusminus_mixture(), general_mixture.per_component_sigma_mixture([0.3, 0.7])]
    run = dict(steps=100, batch=8, L=30, record_every=10, progress=False)
    res = train.fit_mixtures(key, mixes, **run)
    assert res.theta.shape == (3, 4, 5) and res.risk.shape == (3, 10) and res.theta0.shape == (3, 4, 5)
    assert np.all(res.risk[:, -1] < 0.75 * res.risk[:, 0])
    start = np.full((3, 4, 5), 0.1, np.float32)
    np.testing.assert_array_equal(train.fit_mixtures(key, mixes, init=start, **run).theta0, start)


@pytest.mark.slow
def test_risk_loss_and_make_step(key, mixture):
    X = ac.draw_from_mixture(key, mixture, 4, 20)
    theta = ac.init_theta(key, mixture, init="near")
    # float32 sums in one order (the same jitted layer): equal to rounding
    np.testing.assert_allclose(train.risk_loss(theta, X, 1.5), ac.empirical_risk(theta, X, 1.5), rtol=1e-6)
    step = train.make_step(optax.sgd(0.1), 1.5)
    (theta1, _), loss = jax.jit(step)((theta, optax.sgd(0.1).init(theta)), X)
    grad = jax.jit(jax.grad(train.risk_loss))(theta, X, 1.5)
    np.testing.assert_allclose(loss, ac.empirical_risk(theta, X, 1.5), rtol=1e-6)
    np.testing.assert_allclose(theta1, theta - 0.1 * grad, rtol=1e-5, atol=1e-7)


def _bad_sampler(key, data, batch, L):
    return jnp.zeros((batch, L))


@pytest.mark.parametrize(
    "kwargs, error, name",
    [
        (dict(init=np.full((2, 5), np.nan)), ValueError, "init"),
        (dict(init=np.ones((2, 4))), ValueError, "init"),
        (dict(init=np.ones(5)), ValueError, "init"),
        (dict(init=np.ones((3, 5)), H=2), ValueError, "init"),
        (dict(init="huge"), ValueError, "init"),
        (dict(init=None), TypeError, "init"),
        (dict(lr=float("nan")), ValueError, "lr"),
        (dict(lr=float("inf")), ValueError, "lr"),
        (dict(lr=0.0), ValueError, "lr"),
        (dict(lr=-1.0), ValueError, "lr"),
        (dict(optimizer="adam"), TypeError, "optimizer"),
        (dict(steps=0), ValueError, "steps"),
        (dict(batch=0), ValueError, "batch"),
        (dict(L=0), ValueError, "L"),
        (dict(H=0), ValueError, "H"),
        (dict(lam=float("nan")), ValueError, "lam"),
        (dict(lam=-1.0), ValueError, "lam"),
        (dict(lam=[1.0, 2.0]), ValueError, "lam"),
        (dict(lam="1"), TypeError, "lam"),
        (dict(steps=10, record_every=3), ValueError, "record_every"),
    ],
)
@pytest.mark.usefixtures("typecheck_off")
def test_fit_refuses(key, mixture, kwargs, error, name):
    with pytest.raises(error, match=name):
        ac.fit(key, mixture, **{"steps": 20, "progress": False, **kwargs})


@pytest.mark.usefixtures("typecheck_off")
def test_fit_refuses_bad_keys_and_mixtures(key, mixture):
    with pytest.raises(TypeError, match="mixture"):
        ac.fit(key, None)
    with pytest.raises(TypeError, match="mixture"):
        ac.init_theta(key, "mixture")
    with pytest.raises(ValueError, match="key"):
        ac.fit(jax.random.split(key, 2), mixture)
    with pytest.raises(TypeError, match="key"):
        ac.fit(np.array([0, 1]), mixture)  # int64, not a uint32 key
    with pytest.raises(TypeError, match="key"):
        ac.fit(None, mixture)
    with pytest.raises(ValueError, match="S >= 1"):
        ac.fit_many(np.zeros((0, 2), np.uint32), mixture)
    with pytest.raises(ValueError, match="S >= 1"):
        ac.fit_many(jax.random.split(jax.random.key(0), 0), mixture)
    with pytest.raises(ValueError, match="keys"):
        ac.fit_many(key, mixture)  # one key, not (S, 2)
    with pytest.raises(ValueError, match="lam"):
        ac.fit_many(jax.random.split(key, 3), mixture, lam=jnp.ones(2))
    with pytest.raises(ValueError, match="scale"):
        ac.init_theta(key, mixture, scale=-1.0)


def test_fit_sampler_and_fit_mixtures_refuse(key, mixture):
    keys = jax.random.split(key, 2)
    with pytest.raises(TypeError, match="draw"):
        ac.fit_sampler(keys, "sample", mixture, init=np.ones((2, 5)))
    with pytest.raises(ValueError, match="draw"):
        ac.fit_sampler(keys, _bad_sampler, None, init=np.ones((2, 5)))
    with pytest.raises(ValueError, match="init"):
        ac.fit_sampler(keys, ac.draw_from_mixture, mixture, init=np.ones((3, 2, 5)))
    with pytest.raises(ValueError, match="init"):
        ac.fit_sampler(keys, ac.draw_from_mixture, mixture, init=np.ones((2, 4)))
    with pytest.raises(ValueError, match="data"):
        ac.fit_sampler(keys, ac.draw_from_mixture, np.ones((3, 4)), init=np.ones((2, 5)), data_per_seed=True)
    with pytest.raises(TypeError, match="mixtures"):
        train.fit_mixtures(key, [mixture, "default"])
    with pytest.raises(ValueError, match="init"):
        train.fit_mixtures(key, [mixture], init=np.zeros((2, 2, 5)))
    with pytest.raises(ValueError, match="init"):
        train.fit_mixtures(key, [mixture], init="near")
    with pytest.raises(ValueError, match="same d"):
        train.fit_mixtures(key, [mixture, ac.orthogonal_mixture(d=3)])


@pytest.mark.integration
def test_default_setting_aligns_most_seeds(mixture):
    """The book's default setting (chapter "Training dynamics"): d=5, K=2, L=50, r=2,
    sigma=0.5, lam=1, 8 seeds.

    Measured: 8/8 seeds reach per-head |cos| between 0.985 and 0.988 after 2000 Adam
    steps (lr 1e-2, batch 32) from the small random initialisation: near, but not exactly,
    aligned (the large-L minimiser has |cos| = 0.986, attnclust.symbolic).
    """
    keys = jax.random.split(jax.random.PRNGKey(0), 8)
    result = ac.fit_many(keys, mixture, lam=1.0, steps=2000, batch=32, L=50, progress=False)
    cos = result.final_alignment(mixture.centroids)  # (8, 2)
    reached = int(np.sum(cos.min(axis=1) >= 0.97))
    print(f"\n{reached}/8 seeds reached alignment >= 0.97; per-seed min |cos|: {np.round(cos.min(axis=1), 4)}")
    assert reached >= 5
    assert cos.max() < 0.999  # the tilt: not exactly aligned


SHARDED = textwrap.dedent(
    """
    import json, os, sys, jax, numpy as np
    if len(sys.argv) > 1:  # process i of 2, joined by jax.distributed (gloo collectives on the CPU)
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
        jax.distributed.initialize(coordinator_address=sys.argv[2], num_processes=2,
                                   process_id=int(sys.argv[1]))
    import attnclust as ac
    m = ac.orthogonal_mixture()
    keys = jax.random.split(jax.random.PRNGKey(5), 8)
    r = ac.fit_many(keys, m, lam=jax.numpy.linspace(0.5, 2.0, 8), steps=40, batch=8, L=10,
                    record_every=20, progress=False)
    print(json.dumps({"devices": jax.device_count(), "theta": np.asarray(r.theta).tolist(),
                      "risk": np.asarray(r.risk).tolist()}))
    """
)


def _with_devices(n: int) -> dict:
    """The environment of a subprocess with n CPU devices (keeping the XLA flags the tests
    already run with, see conftest.py)."""
    flags = f"{os.environ.get('XLA_FLAGS', '')} --xla_force_host_platform_device_count={n}"
    return dict(os.environ, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu")


def _run_with_devices(n):
    env = _with_devices(n)
    out = subprocess.run([sys.executable, "-c", SHARDED], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.integration
def test_fit_many_over_two_processes_matches_one():
    """Two processes of 2 CPU devices each, joined by jax.distributed (as two hosts would
    be): the 8 seeds are sharded over the 4 devices and every process gets all results,
    equal to one device's (to float32 rounding: the programs are compiled for other shapes)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    env = dict(os.environ, JAX_NUM_CPU_DEVICES="2", JAX_PLATFORMS="cpu")
    procs = [subprocess.Popen([sys.executable, "-c", SHARDED, str(i), address], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err[-2000:] for _, err in outs]
    one = _run_with_devices(1)
    for out, _ in outs:
        got = json.loads(out.strip().splitlines()[-1])
        assert got["devices"] == 4
        np.testing.assert_allclose(got["theta"], one["theta"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got["risk"], one["risk"], rtol=1e-5)


@pytest.mark.integration
def test_fit_many_sharded_over_four_devices_matches_one():
    """Seeds (and their lam) sharded over 4 CPU devices give the results of one device."""
    one, four = _run_with_devices(1), _run_with_devices(4)
    assert one["devices"] == 1 and four["devices"] == 4
    np.testing.assert_allclose(four["theta"], one["theta"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(four["risk"], one["risk"], rtol=1e-5)


@pytest.mark.integration
def test_seed_sharding_is_used_with_several_devices():
    code = "import jax; from attnclust.train import _seed_sharding; s = _seed_sharding(8); print(s is not None and len(s.device_set))"
    env = _with_devices(4)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "4"


def test_draw_group_divides_and_fits():
    """Batches are drawn ahead in groups that divide the record and stay within DRAW_FLOATS
    (a single step's batch is always allowed, however large)."""
    from attnclust.train import DRAW_FLOATS, _draw_group

    assert _draw_group(20, 8000) == 20
    assert _draw_group(100, DRAW_FLOATS // 30) == 25
    assert _draw_group(7, DRAW_FLOATS // 2) == 1
    assert _draw_group(4, 10 * DRAW_FLOATS) == 1


@pytest.mark.slow
def test_drawing_ahead_does_not_change_the_run(monkeypatch, mixture, key):
    """Batches drawn in groups (the default) and one step at a time give the same run."""
    grouped = ac.fit(key, mixture, **RUN)
    assert train._draw_group(20, RUN["batch"] * RUN["L"] * mixture.d) == 20
    monkeypatch.setattr(train, "DRAW_FLOATS", 1)  # groups of one step
    jax.clear_caches()
    single = ac.fit(key, mixture, **RUN)
    jax.clear_caches()
    np.testing.assert_allclose(single.thetas, grouped.thetas, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(single.risk, grouped.risk, rtol=1e-6)


# --------------------------------------------------------------------------- TrainConfig


def test_train_config_validates_once_and_is_hashable():
    c = ac.TrainConfig(steps=40, record_every=20, lam=[0.5, 2.0])
    assert c.lam == (0.5, 2.0) and isinstance(c.lam, tuple)  # a per-seed sweep, hashable
    assert c.n_records == 2 and hash(c) == hash(ac.TrainConfig(steps=40, record_every=20, lam=(0.5, 2.0)))
    assert ac.TrainConfig(steps=250).record_every == 2  # max(1, steps // 100)
    np.testing.assert_array_equal(c.lams(2), np.float32([0.5, 2.0]))
    with pytest.raises(ValueError, match="one value per seed"):
        c.lams(3)
    with pytest.raises(Exception):
        c.steps = 10  # frozen
    # Adam is shared between configurations with the same lr: one compiled program
    assert ac.TrainConfig(lr=0.02).program.optimizer is ac.TrainConfig(lr=0.02, lam=3.0).program.optimizer
    assert ac.TrainConfig(lr=0.02).program == ac.TrainConfig(lr=0.02, lam=3.0).program


@pytest.mark.usefixtures("typecheck_off")
@pytest.mark.parametrize("fields, error, name", [
    (dict(steps=0), ValueError, "steps"), (dict(steps=2.5), TypeError, "steps"),
    (dict(batch=-1), ValueError, "batch"), (dict(L=0), ValueError, "L"),
    (dict(lr=float("nan")), ValueError, "lr"), (dict(lam=0.0), ValueError, "lam"),
    (dict(lam=[[1.0]]), ValueError, "lam"), (dict(lam=[]), ValueError, "lam"),
    (dict(lam="1"), TypeError, "lam"), (dict(steps=10, record_every=3), ValueError, "record_every"),
    (dict(optimizer="adam"), TypeError, "optimizer"),
])
def test_train_config_refuses(fields, error, name):
    with pytest.raises(error, match=name):
        ac.TrainConfig(**fields)


def test_train_config_of_keywords():
    base = ac.TrainConfig(steps=40, record_every=20, lr=0.05)
    assert ac.TrainConfig.of(base) is base
    assert ac.TrainConfig.of(base, lr=None, L=7) == base.replace(L=7)
    assert ac.TrainConfig.of(None, steps=40) == ac.TrainConfig(steps=40)
    with pytest.raises(TypeError, match="config"):
        ac.TrainConfig.of({"steps": 40})


@pytest.mark.slow
def test_config_and_keywords_give_the_same_run(key, mixture):
    config = ac.TrainConfig(steps=RUN["steps"], batch=RUN["batch"], L=RUN["L"], record_every=RUN["record_every"])
    a = ac.fit(key, mixture, config, progress=False)
    b = ac.fit(key, mixture, **RUN)
    np.testing.assert_array_equal(a.theta, b.theta)
    c = ac.fit(key, mixture, config.replace(lr=0.1), progress=False)
    d = ac.fit(key, mixture, config, lr=0.1, progress=False)  # a keyword replaces config's field
    np.testing.assert_array_equal(c.theta, d.theta)
    assert not np.array_equal(a.theta, c.theta)


@pytest.mark.usefixtures("typecheck_off")
def test_records_too_large_for_memory_are_refused_before_xla(monkeypatch, key, mixture):
    """steps=10**9 with a record every step asked XLA for 10**9 records of keys, risks and
    heads (tens of GB), and XLA ended the process: a ValueError naming the sizes, before any
    allocation. Here the device is made to hold 64 KiB, so that 4,000 records are too many."""
    monkeypatch.setattr(train.v, "memory_bytes", lambda: 2**16)
    with pytest.raises(ValueError, match=r"steps=4000, record_every=1: too large, the records .* memory"):
        ac.fit(key, mixture, steps=4000, record_every=1, batch=1, L=2, progress=False)
    with pytest.raises(ValueError, match=r"steps=4000, record_every=1, S=2: too large"):
        ac.fit_many(jax.random.split(key, 2), mixture, steps=4000, record_every=1, batch=1, L=2, progress=False)


def _interrupt_chunk(monkeypatch, at: int):
    """Make the ``at``-th chunk of every run raise KeyboardInterrupt (as Ctrl-C would while
    it runs) instead of running."""
    real = train._chunk_runner

    def runner(*args):
        run, calls = real(*args), []

        def interrupted(*a):
            calls.append(a)
            if len(calls) == at:
                raise KeyboardInterrupt
            return run(*a)

        return interrupted

    monkeypatch.setattr(train, "_chunk_runner", runner)


def _stopped(call) -> "ac.FitInterrupted":
    try:
        call()
    except ac.FitInterrupted as stop:
        return stop
    except KeyboardInterrupt:
        pytest.fail("a bare KeyboardInterrupt: the records of the run were lost")
    pytest.fail("the run was not interrupted")


@pytest.mark.parametrize("S", [1, 2])
def test_an_interrupted_fit_keeps_the_records_made(monkeypatch, key, mixture, S):
    """Ctrl-C during a run raised a bare KeyboardInterrupt and every step was lost: it is now
    a FitInterrupted (a KeyboardInterrupt) whose result holds the records of the chunks
    finished, the same numbers as the first records of the whole run, its theta the heads
    of the last of them."""
    run = {**RUN, "progress": True}  # two chunks of one record each
    if S == 1:
        call = lambda: ac.fit(key, mixture, **run)  # noqa: E731
    else:
        call = lambda: ac.fit_many(jax.random.split(key, S), mixture, **run)  # noqa: E731
    whole = call()
    _interrupt_chunk(monkeypatch, at=2)
    stop = _stopped(call)
    assert isinstance(stop, KeyboardInterrupt) and stop.steps == 40
    assert "interrupted after 20 of 40 steps" in str(stop) and ".result" in str(stop)
    part = stop.result
    np.testing.assert_array_equal(part.steps, [20])
    np.testing.assert_array_equal(part.risk, whole.risk[..., :1])
    np.testing.assert_array_equal(part.thetas, whole.thetas[..., :1, :, :])
    np.testing.assert_array_equal(part.theta, whole.thetas[..., 0, :, :])
    np.testing.assert_array_equal(part.theta0, whole.theta0)


def test_a_fit_interrupted_before_its_first_record_keeps_its_initial_heads(monkeypatch, key, mixture):
    _interrupt_chunk(monkeypatch, at=1)
    stop = _stopped(lambda: ac.fit(key, mixture, **RUN))
    assert "interrupted after 0 of 40 steps" in str(stop)
    part = stop.result
    assert part.n_records == 0 and part.risk.shape == (0,) and part.thetas.shape == (0, 2, 5)
    np.testing.assert_array_equal(part.theta, part.theta0)
    np.testing.assert_allclose(part.theta0, ac.init_theta(jax.random.split(key)[0], mixture), rtol=1e-6)
