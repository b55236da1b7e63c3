"""Long streamed calls show a tqdm progress bar when asked (``progress=True``), and nothing otherwise."""

import numpy as np

from privsum.bitsum import ThreeNBBitSum


def test_streamed_runs_show_progress_on_request(capsys):
    protocol = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=300)
    chunks = [np.ones((100, 2), dtype=np.int8)] * 3
    quiet = protocol.run_streamed(iter(chunks), rng=5)
    assert capsys.readouterr().err == ""
    loud = protocol.run_streamed(iter(chunks), rng=5, progress=True)
    assert "chunk" in capsys.readouterr().err  # tqdm's bar, on standard error
    assert np.array_equal(quiet, loud)  # the bar changes nothing else


def test_progress_must_be_a_flag():
    import pytest

    from privsum import InvalidParameterError

    protocol = ThreeNBBitSum.from_privacy(epsilon=1.0, delta=1e-6, n_users=300)
    with pytest.raises(InvalidParameterError, match="'progress' parameter of ThreeNBBitSum must be True or False"):
        protocol.run_streamed(iter([np.ones((100, 2), dtype=np.int8)]), rng=5, progress="yes")
