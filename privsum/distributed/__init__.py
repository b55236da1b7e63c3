"""Run shuffle protocols on Dask workers, for more users than one machine holds.

Each chunk of users (a block of a Dask array, or one element of a sequence of arrays or Dask
``Delayed`` objects) is randomized on a worker with its own random stream, spawned from one
`numpy.random.SeedSequence`; the workers return `~privsum.shuffle.streaming.PartialView`
histograms, which a tree of additions reduces (the shuffle: a histogram is all the analyzer may
see); the driver adds what happens once per run and analyzes. Only histograms travel back, so
the driver's memory does not grow with the number of users.

Dask is an optional dependency: ``pip install 'privsum[dask]'``. It is imported when a function
here is called, with a clear error if it is missing.

Privacy:
    The same as the local run: users randomize independently, so a chunked run has the same
    view in distribution (the tests check it against the local run). The workers see the users'
    inputs and their messages before shuffling: in a deployment they stand in for the users'
    devices and the shuffler, and must be trusted as such. numpy's generators are not
    cryptographically secure (see `privsum._random`).
"""

from privsum.distributed.engine import build_race, partial_view, run, sample_view, spawn_seeds

__all__ = ["build_race", "partial_view", "run", "sample_view", "spawn_seeds"]
