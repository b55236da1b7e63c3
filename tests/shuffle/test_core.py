import numpy as np
import pytest

from privsum import InvalidParameterError
from privsum.shuffle import MessageBatch, MessageHistogram, shuffle_messages
from privsum.testing import ProtocolConformance, assert_matches_pmf, assert_mean, assert_same_distribution
from tests.shuffle.toy import ToyFlip


class TestToyConformance(ProtocolConformance):
    def make_protocol(self):
        return ToyFlip(flip_probability=0.2)

    def make_input(self, rng):
        return rng.integers(0, 2, size=(300, 4))


def test_histogram_merge_is_addition():
    protocol = ToyFlip(flip_probability=0.1)
    bits = np.random.default_rng(0).integers(0, 2, size=(100, 3))
    first, second = protocol.randomize(bits[:40], rng=1), protocol.randomize(bits[40:], rng=2)
    whole = MessageBatch.concatenate([first, second])
    assert protocol.view(first) + protocol.view(second) == protocol.view(whole)


def test_histogram_rejects_unknown_values_and_shape_mismatch():
    batch = MessageBatch(np.array([0]), np.array([5]), n_instances=1)
    with pytest.raises(InvalidParameterError, match="'batch'"):
        MessageHistogram.from_messages(batch, alphabet=(0, 1))
    with pytest.raises(InvalidParameterError, match="'other'"):
        MessageHistogram.zeros(2, (0, 1)) + MessageHistogram.zeros(3, (0, 1))
    with pytest.raises(InvalidParameterError, match="'alphabet'"):
        MessageHistogram.zeros(2, (1, 0))


def test_batch_validation():
    with pytest.raises(InvalidParameterError, match="'instances'"):
        MessageBatch(np.array([0, 3]), np.array([1, 1]), n_instances=2)
    with pytest.raises(InvalidParameterError, match="'values'"):
        MessageBatch(np.array([0]), np.array([1.5]), n_instances=1)


def test_shuffler_is_a_uniform_permutation():
    # Where does message 0 land? Uniform over 5 positions (chi-square, alpha = 1e-6).
    batch = MessageBatch(np.zeros(5, dtype=int), np.arange(5), n_instances=1)
    generator = np.random.default_rng(3)
    positions = [int(np.flatnonzero(shuffle_messages(batch, rng=generator).values == 0)[0]) for _ in range(20_000)]
    assert_matches_pmf(np.array(positions), np.arange(5), np.full(5, 0.2))


def test_fast_path_matches_faithful_path_in_distribution():
    protocol = ToyFlip(flip_probability=0.3)
    bits = np.random.default_rng(4).integers(0, 2, size=(50, 1))
    generator = np.random.default_rng(5)
    fast = [protocol.sample_view(bits, rng=generator).count(1)[0] for _ in range(4000)]
    faithful = [protocol.view(protocol.randomize(bits, rng=generator)).count(1)[0] for _ in range(4000)]
    assert_same_distribution(np.array(fast), np.array(faithful))


def test_toy_estimate_is_unbiased():
    protocol = ToyFlip(flip_probability=0.25)
    bits = np.random.default_rng(6).integers(0, 2, size=(200, 500))
    estimates = protocol.run(bits, rng=7)
    variance = 200 * 0.25 * 0.75 / 0.5**2
    assert_mean(estimates - bits.sum(axis=0), 0.0, variance=variance)


def test_run_validates_path_and_rng():
    protocol = ToyFlip(flip_probability=0.25)
    bits = np.zeros((3, 1), dtype=int)
    with pytest.raises(InvalidParameterError, match="'path'"):
        protocol.run(bits, path="quick")
    with pytest.raises(InvalidParameterError, match="'rng'"):
        protocol.run(bits, rng="seed")


def test_statistical_assertions_can_fail():
    generator = np.random.default_rng(8)
    with pytest.raises(AssertionError):
        assert_mean(generator.normal(0.1, 1.0, 100_000), 0.0, variance=1.0)
    with pytest.raises(AssertionError):
        assert_same_distribution(generator.poisson(5.0, 20_000), generator.poisson(5.3, 20_000))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"instances": [[0], [0, 0]], "values": [1, 1]}, "instances"),  # ragged: numpy cannot build it
        ({"instances": [0, 1], "values": [0.5, 1.0]}, "values"),  # floats are refused, never rounded
        ({"instances": [0, 1], "values": [True, False]}, "values"),
        ({"instances": [0, 1], "values": np.array([2**63, 1], dtype=np.uint64)}, "values"),  # would wrap in int64
        ({"instances": "ab", "values": [1, 1]}, "instances"),
        ({"instances": [0, 1], "values": [1]}, "values"),
    ],
)
def test_batch_refuses_malformed_arrays_naming_them(kwargs, name):
    with pytest.raises(InvalidParameterError, match=f"'{name}'"):
        MessageBatch(n_instances=2, **kwargs)


def test_batch_take_and_concatenate_validate_their_arguments():
    batch = MessageBatch(np.array([0, 1]), np.array([1, -1]), n_instances=2)
    assert batch.take(np.array([1])).values.tolist() == [-1]
    assert batch.take([]).n_messages == 0
    for order in ([5], [0.5], "a"):
        with pytest.raises(InvalidParameterError, match="'order'"):
            batch.take(order)
    for batches in (None, [], [batch, "batch"]):
        with pytest.raises(InvalidParameterError, match="'batches'"):
            MessageBatch.concatenate(batches)


@pytest.mark.parametrize(
    "alphabet", [(0, float("inf")), (0, float("nan")), None, (), (1, 0), (0, 0), (0, 0.5), (False, True), "ab", (0, 2**70)]
)
def test_histogram_refuses_bad_alphabets_naming_it(alphabet):
    with pytest.raises(InvalidParameterError, match="'alphabet'"):
        MessageHistogram(np.zeros((1, 2), dtype=np.int64), alphabet)


def test_histogram_accepts_integer_sequences_and_refuses_bad_counts():
    assert MessageHistogram(np.zeros((1, 3), dtype=np.int64), range(-1, 2)).alphabet == (-1, 0, 1)
    assert MessageHistogram(np.zeros((1, 2), dtype=np.int64), np.array([3, 7])).alphabet == (3, 7)
    for counts in ([[1], [1, 2]], [[1.0, 2.0]], [[-1, 2]], [[True, False]]):
        with pytest.raises(InvalidParameterError, match="'counts'"):
            MessageHistogram(counts, (0, 1))
    view = MessageHistogram(np.array([[1, 2]]), (0, 1))
    for value in (np.array([0, 1]), 0.0, True, 5):
        with pytest.raises(InvalidParameterError, match="'value'"):
            view.count(value)
    with pytest.raises(InvalidParameterError, match="'batch'"):
        MessageHistogram.from_messages("batch", alphabet=(0, 1))
