"""`ShuffledKDE.from_privacy(protocol=...)` accepts the classifier's short names as well as the classes."""

import pytest

from privsum import InvalidParameterError
from privsum.apps import classifier
from privsum.bitsum import PROTOCOLS, RRBitSum, ThreeNBBitSum, bitsum_protocol
from privsum.kde import ShuffledKDE
from privsum.lsq import RandomFourierFeatures


def family():
    return RandomFourierFeatures(dimension=3, n_repetitions=4, seed=2)


@pytest.mark.parametrize(("name", "cls"), [("3nb", ThreeNBBitSum), ("RR", RRBitSum)])
def test_name_and_class_calibrate_the_same_protocol(name, cls):
    by_name = ShuffledKDE.from_privacy(family=family(), protocol=name, epsilon=4.0, delta=1e-6, n_users=200)
    by_class = ShuffledKDE.from_privacy(family=family(), protocol=cls, epsilon=4.0, delta=1e-6, n_users=200)
    assert type(by_name.bitsum) is cls and by_name.bitsum == by_class.bitsum


def test_the_classifier_and_the_kde_use_the_same_names_for_bit_sums():
    bit_sums = {name: cls for name, cls in classifier.PROTOCOLS.items() if name not in classifier.VECTOR_PROTOCOLS}
    assert bit_sums == PROTOCOLS
    assert set(PROTOCOLS) >= {"rr", "3nb", "pure", "local", "central-laplace", "exact"}


@pytest.mark.parametrize("protocol", ["rappor", 3, object, None])
def test_unknown_protocol_is_refused_with_the_names(protocol):
    with pytest.raises(InvalidParameterError, match=r"'protocol' parameter of ShuffledKDE.from_privacy.*'3nb'"):
        ShuffledKDE.from_privacy(family=family(), protocol=protocol, epsilon=4.0, delta=1e-6, n_users=200)
    with pytest.raises(InvalidParameterError, match="'protocol'"):
        bitsum_protocol(protocol, "caller")
