"""The rng normalisation and the opt-in secure generator (statistical checks at alpha = 1e-6)."""

import importlib.util
import sys

import numpy as np
import pytest

from privsum import InvalidParameterError
from privsum._random import as_generator, secure_generator
from privsum.bitsum import RRBitSum, ThreeNBBitSum
from privsum.lsq import L2LSH
from privsum.sketches import RACE
from privsum.sums import BlanketRealSum
from privsum.testing import assert_mean

needs_randomgen = pytest.mark.skipif(importlib.util.find_spec("randomgen") is None, reason="the secure extra is not installed")


@needs_randomgen
def test_secure_generator_is_chacha_keyed_from_the_os_and_reproducible_when_seeded():
    generator = secure_generator()
    assert type(generator.bit_generator).__name__ == "ChaCha"
    assert secure_generator().integers(0, 2**63) != secure_generator().integers(0, 2**63)  # fresh 256-bit keys
    assert secure_generator(seed=5).random(4).tolist() == secure_generator(seed=5).random(4).tolist()
    children = generator.spawn(2)
    assert all(type(child.bit_generator).__name__ == "ChaCha" for child in children)
    assert children[0].random() != children[1].random()


@needs_randomgen
def test_as_generator_accepts_secure_and_names_the_parameter_otherwise():
    assert type(as_generator("secure").bit_generator).__name__ == "ChaCha"
    with pytest.raises(InvalidParameterError, match="'rng'"):
        as_generator("os", "f")
    with pytest.raises(InvalidParameterError, match="'seed'"):
        secure_generator(seed=-1)
    with pytest.raises(InvalidParameterError, match="'seed'"):
        secure_generator(seed="key")


@needs_randomgen
def test_secure_randomness_runs_bit_sums_without_bias():
    protocol = RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=200)
    bits = (np.arange(200)[:, None] % 3 == 0).astype(np.int8) * np.ones((1, 2_000), dtype=np.int8)
    for path in ("fast", "faithful"):
        estimates = protocol.run(bits, rng="secure", path=path)
        assert_mean(estimates, bits[:, 0].sum(), variance=protocol.variance())
    three_nb = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=200)
    assert_mean(three_nb.run(bits, rng="secure"), bits[:, 0].sum(), variance=three_nb.variance())


@needs_randomgen
def test_secure_randomness_runs_a_real_sum_and_a_race_release():
    protocol = BlanketRealSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=500)
    x = np.full((500, 1_000), 0.3)
    assert_mean(protocol.run(x, rng="secure"), 150.0, variance=float(protocol.variance(x)[0]))
    family = L2LSH(dimension=1, n_repetitions=4, bucket_width=1.0, n_buckets=8, seed=0)
    sketch = RACE(family).update(np.zeros((10, 1)))
    for sampler in ("numpy", "opendp"):
        released = sketch.release(1.0, noise_source=sampler, rng="secure")
        assert released.counts.shape == sketch.counts.shape


def test_secure_without_randomgen_fails_clearly(monkeypatch):
    monkeypatch.setitem(sys.modules, "randomgen", None)  # import randomgen now raises ImportError
    with pytest.raises(ImportError, match=r"privsum\[secure\]"):
        secure_generator()
    with pytest.raises(ImportError, match=r"privsum\[secure\]"):
        RRBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=10).run(np.ones(10), rng="secure")
    assert as_generator(0).random() == np.random.default_rng(0).random()  # the default path needs nothing extra
