"""How far the split-and-mix share multiset is from a function of the sum: a bound computed exactly from random graphs.

In the split-and-mix protocol (Ishai, Kushilevitz, Ostrovsky & Sahai, FOCS 2006) each of ``n`` users
splits its value ``x_i`` in ``Z_q`` into ``m`` additive shares, uniform subject to summing to
``x_i``; the analyzer sees the shuffled multiset of all ``n m`` shares. Its distance to the *ideal*
view, ``n m`` values uniform subject to their total being ``sum x_i`` (a function of the sum
alone), is what a shuffled sum charges to delta.

Balle, Bell, Gascón & Nissim (CCS 2020) give an explicit sufficient share count
(`privsum.sums.multi_message.supported_security_bits`). Ghazi, Manurangsi, Pagh & Velingker
("Private aggregation from fewer anonymous messages", EUROCRYPT 2020) improve its asymptotics for
the same worst-case security (their differentially private protocol rests on that worst-case
security, through a reduction of Balle et al.); their explicit
constants could not be checked here, so this module does not use them. Instead it computes a
chi-square bound exactly (derived below, verified against enumerated distances in the tests), in
two forms: for the worst case over the inputs, and averaged over independent per-user noise (the
form a noisy sum can use); `share_distance_bound` takes the smallest bound that applies.

**The chi-square bound.** Order the shuffled shares at random: a labelled partition ``sigma`` of
the ``N = n m`` positions into blocks of ``m`` (block ``i`` holds user ``i``'s shares) is uniform,
and given ``sigma`` the share vector ``y`` is uniform on ``{block sums = x}``. So
``P_x(y) = q^-(n(m-1)) Pr_sigma[block sums of y = x]`` and the ideal is
``U(y) = q^-(N-1) [sum y = sum x]``. Then ``1 + chi2(P_x || U) = q^(N-1) sum_y P_x(y)^2`` is an
expectation over two independent partitions ``sigma, tau``: the number of ``y`` meeting both
partitions' ``2n`` block constraints is ``q^(N - 2n + c)`` when they are consistent, where ``c`` is
the number of connected components of the bipartite multigraph with a vertex per block of
``sigma`` and of ``tau`` and an edge per position (its incidence matrix is totally unimodular, so
the count holds for every modulus, prime or not). Dropping the consistency condition (which
every input meets when all ``x_i`` are equal)::

    chi2(P_x || U) <= E[q^(c - 1)] - 1 =: G(n)

for ``c`` the components of a uniformly random ``m``-regular bipartite multigraph on ``n + n``
vertices (the configuration model). Conditioning on the component of one vertex (``s`` vertices
per side, probability ``p_s``) gives the recursion with non-negative terms only::

    G(a) = sum_{s < a} p_s(a) (q - 1 + q G(a - s)),
    p_s(a) = C(a-1, s-1) C(a, s) / C(m a, m s) * Conn(s),

``Conn(s)`` the probability that the ``s + s`` graph is connected (computed for small ``s``,
bounded by 1 otherwise). Terms with ``K < s < a - K`` are bounded together by
``C(a, s) >= C(a, K+1)`` and ``C(m a, m s) >= C(a, s)^m``. Every replacement is an upper bound,
so the computed value bounds ``G(n)``; it is evaluated at ``q`` rounded up to a power of two (``G``
increases with ``q``) with a relative margin of ``1e-5`` for floating point.

**Averaged over per-user noise.** When user ``i`` shares ``z_i = x_i + N_i`` with independent
``N_i`` (its part of a noisy sum) and the analyzer only needs to learn the noisy total, the view to
compare is the mixture ``E_N P_(x+N)`` with ``E_N U_(sum(x+N))``, a post-processing of the noisy
sum. By joint convexity and Jensen, ``TV <= E_N TV(P_z, U) <= sqrt(E_N chi2(P_z || U)) / 2``, and
``1 + E_N chi2 = E[q^(c-1) P_N(consistent)]``: the consistency conditions are now random. Let
``rho >= max_v P(z_i = v mod q)`` for every user (the *value mass*: for Skellam shares, the
Skellam law's largest mass plus its tail beyond ``q/2``). Keep only the conditions of the
*single-pair* components (one block of ``sigma`` with the same ``m`` positions as one block of
``tau``, of users ``i`` and ``j``: the condition is ``z_i = z_j``); dropping conditions only raises
the probability. Given the graph with ``tau``'s labels forgotten, ``tau``'s labelling is a uniform
bijection ``pi`` of its blocks to the users, independent of the graph (relabelling ``tau``'s blocks
leaves its law unchanged). The conditions ``z_(i_l) = z_(pi(v_l))`` form a graph ``H`` on the users,
and ``P_N(all hold) <= rho^rank(H)``, ``rank = users - components`` (each component of ``H`` with
``s`` users holds with probability ``sum_v prod_u P(z_u = v) <= rho^(s-1)``; different components
involve independent users). Reveal
``pi(v_1), pi(v_2), ...`` in any order fixed by the graph: the ``l``-th condition fails to raise the
rank only if ``pi(v_l)`` lies in the component of ``i_l`` already built, which is a path ending at
``i_l`` whose only user not yet an image of ``pi`` is its head, so with probability at most
``1/(n - l + 1)``; hence ``E_pi[rho^rank] <= prod_l (rho + (1 - rho)/(n - l + 1))``. The recursion above peels
the component of the first remaining vertex of ``sigma``'s side, a function of the graph; revealing
the single pairs in the reverse of that peeling order, a single pair peeled when ``a`` pairs are
left comes after at most ``a - 1`` others (all inside those ``a - 1`` pairs), so it weighs at most
``w(a) = rho + (1 - rho)/(n - a + 1)`` (``w = 1`` when ``rho = 1``: the worst case). So
``E_N chi2 <= E[q^(c-1) prod w] - 1``, computed by the same recursion with the factor ``q`` of a
single-pair component replaced by ``q w(a)`` (and ``G(1) = w(1) - 1``). Every term stays
non-negative when ``q rho^2 >= 1`` (``rho`` is raised to ``q^(-1/2)`` otherwise: the bound grows
with ``rho``), so the upper bounds of the recursion stay valid. The true expectation is a
polynomial in ``rho`` with non-negative coefficients (each ``w`` is ``rho + (1 - rho) c`` with
``0 <= c <= 1``), hence convex: it is evaluated on the chord between ``rho = q^(-1/2)`` and
``rho = 1``, two recursions per ``(n, m, q)`` whatever the noise. Its limit: the dominant single
pairs still cost about ``q (rho + 2/n)`` each, and ``rho`` is the mass of one user's noise share
(not of the total noise), so it saves shares only where ``rho + 2/n`` is far below 1.

Finally ``TV(P_x, U) <= sqrt(chi2) / 2``, and ``d`` coordinates with independent shares (each
coordinate's shares shuffled on their own) have ``1 + chi2 = prod (1 + chi2_j)`` (averaged too:
the coordinates' noise shares are independent, so the expectation of the product is the product
of the expectations, and Jensen's step is taken once, on the joint view), so their joint
view is within ``sqrt((1 + G)^d - 1) / 2`` of the ideal: ``sqrt(d)`` times one coordinate's
distance, where a union bound pays ``d`` times.

The square root is not slack of the analysis: the count of ``m``-subsets of shares that sum to a
user's value is a sum of very many rare indicators, whose ``n`` planted hits shift it by about
``sqrt(chi2)`` standard deviations, so the true distance is of the order of ``sqrt(G)`` too (an
argument, not a proof; the tests show the bound within a small factor of the exact distance).

References:
    Ishai, Kushilevitz, Ostrovsky & Sahai, "Cryptography from Anonymity", FOCS 2006;
    Balle, Bell, Gascón & Nissim, "Private Summation in the Multi-Message Shuffle Model", CCS 2020;
    Ghazi, Manurangsi, Pagh & Velingker, "Private Aggregation from Fewer Anonymous Messages",
    EUROCRYPT 2020.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from privsum._validation import check_array, check_integer, check_integer_array, check_real, invalid

__all__ = [
    "MAX_CHI_SQUARE_USERS",
    "exact_share_distance",
    "least_share_count",
    "share_chi_square_bound",
    "share_distance_bound",
    "share_distance_floor",
]

#: Largest ``n`` for which the chi-square recursion is run (``O(n K)`` work, about a second at the cap);
#: beyond it only Balle, Bell, Gascón & Nissim's bound is used.
MAX_CHI_SQUARE_USERS = 2**17
_SMALL_COMPONENTS = 16  # K: components of up to K vertices per side are summed exactly
_FLOAT_MARGIN = 1e-5
_MAX_EXACT_OUTCOMES = 2**21


def share_chi_square_bound(n_users: int, n_shares: int, modulus: int, value_mass: float | None = None) -> float:
    """Upper bound on ``chi2(P_x || U)`` for one split-and-mix instance, whatever the inputs ``x``.

    ``G(n) = E[q^(c-1)] - 1`` over the components ``c`` of a random ``m``-regular bipartite
    multigraph (module docstring), computed at ``q`` rounded up to a power of two. ``inf`` when
    ``m < 3`` or ``n`` exceeds `MAX_CHI_SQUARE_USERS` (the bound is then not evaluated).

    Examples:
        >>> share_chi_square_bound(3_000, 8, 2**20) < 1e-17
        True
        >>> share_chi_square_bound(3_000, 8, 2**20) < share_chi_square_bound(3_000, 7, 2**20)
        True
    """
    owner = "share_chi_square_bound"
    n_users = check_integer(n_users, "n_users", owner, low=2)
    n_shares = check_integer(n_shares, "n_shares", owner, low=2)
    modulus = check_integer(modulus, "modulus", owner, low=2)
    if n_shares < 3 or n_users > MAX_CHI_SQUARE_USERS:
        return math.inf
    log2_modulus = max(0, (modulus - 1).bit_length())
    if value_mass is None:
        return _chi_square(n_users, n_shares, log2_modulus)
    value_mass = check_real(value_mass, "value_mass", owner, low=0.0, high=1.0, low_open=True)
    least = 2.0 ** (-log2_modulus / 2)  # q rho^2 >= 1 keeps every term of the recursion non-negative
    at_least = _chi_square(n_users, n_shares, log2_modulus, least)
    if value_mass <= least:
        return at_least
    part = (value_mass - least) / (1.0 - least)  # convex in rho: below the chord
    return (1.0 - part) * at_least + part * _chi_square(n_users, n_shares, log2_modulus)


def share_distance_bound(n_users: int, n_shares: int, modulus: int, n_views: int = 1, value_mass: float | None = None) -> float:
    """Statistical distance between ``n_views`` independent split-and-mix views and their ideal: the smaller bound.

    The chi-square bound tensorised over the views, ``sqrt((1 + G)^d - 1) / 2``, or Balle, Bell,
    Gascón & Nissim's ``d 2^-sigma`` (`privsum.sums.multi_message.supported_security_bits`, a union
    bound), whichever is smaller; at most 1.

    Examples:
        >>> share_distance_bound(3_000, 8, 2**20, n_views=384) < 1e-7
        True
    """
    from privsum.sums.multi_message import supported_security_bits  # the module that uses this one

    owner = "share_distance_bound"
    n_views = check_integer(n_views, "n_views", owner, low=1)
    n_users = check_integer(n_users, "n_users", owner, low=2)
    bbgn = 1.0 if n_users < 3 else n_views * 2.0 ** min(1.0, -supported_security_bits(n_shares, modulus, n_users))
    chi2 = share_chi_square_bound(n_users, n_shares, modulus, value_mass)
    exponent = n_views * math.log1p(chi2)
    joint = math.expm1(exponent) if exponent < 4.0 else math.inf  # beyond, the distance bound exceeds 1 anyway
    return min(1.0, bbgn, 0.5 * math.sqrt(joint))


def share_distance_floor(n_users: int, n_shares: int, modulus: int, n_views: int = 1) -> float:
    """A value `share_distance_bound` never goes below, whatever the value mass: to skip hopeless share counts cheaply.

    For ``n > 2K + 1`` the computed chi-square bound includes, with non-negative others, the terms of
    a single pair holding vertex 1 (``p_1(n) (q w(n) F(n - 1) - 1)``, ``w(n) = 1``) and of vertex 1's
    component leaving one pair (``(n - 1) n / C(m n, m) (q w(1) - 1)``), and ``F, w >= q^(-1/2)``: so
    it is at least ``n^2 / C(m n, m) (q^(1/2) - 1)`` (``q`` rounded up to a power of two). BBGN20's
    bound is as in `share_distance_bound`.
    """
    from privsum.sums.multi_message import supported_security_bits  # the module that uses this one

    if n_users <= 2 * _SMALL_COMPONENTS + 1 or n_shares < 3 or n_users > MAX_CHI_SQUARE_USERS:
        return share_distance_bound(n_users, n_shares, modulus, n_views)
    bbgn = n_views * 2.0 ** min(1.0, -supported_security_bits(n_shares, modulus, n_users))
    root = 2.0 ** (max(0, (modulus - 1).bit_length()) / 2)
    log_single = 2 * math.log(n_users) - _log_comb(n_shares * n_users, n_shares)
    exponent = n_views * math.log1p(math.exp(log_single) * (root - 1.0))
    joint = math.expm1(exponent) if exponent < 4.0 else math.inf
    return min(1.0, bbgn, 0.5 * math.sqrt(joint))


def least_share_count(
    distance: float, modulus: int, n_users: int, n_views: int = 1, max_shares: int = 1024, value_mass: float | None = None
) -> int:
    """Least ``m >= 2`` with `share_distance_bound` at most ``distance``.

    Raises:
        InvalidParameterError: no ``m <= max_shares`` suffices (``n_users`` too small for ``distance``).

    Examples:
        >>> least_share_count(1e-9, 2**20, 3_000, n_views=384)
        9
    """
    owner = "least_share_count"
    distance = check_real(distance, "distance", owner, low=0.0, high=1.0, low_open=True)
    shares = next(
        (m for m in range(2, max_shares + 1) if share_distance_bound(n_users, m, modulus, n_views, value_mass) <= distance),
        None,
    )
    if shares is None:
        raise invalid("n_users", owner, f"large enough that at most {max_shares} shares reach distance {distance:g}", n_users)
    return shares


@lru_cache(maxsize=256)
def _chi_square(n: int, m: int, log2_modulus: int, value_mass: float = 1.0) -> float:
    """``G`` bounded: ``E[q^(c-1) prod w(a)] - 1``, a single pair found at ``a`` pairs left weighing ``w(a)``.

    ``w(a) = rho + (1 - rho)/(n - a + 1)``, ``rho = value_mass`` (1: the worst case over inputs, every
    ``w = 1``); ``q rho^2 >= 1`` keeps every term non-negative.
    """
    q = float(2**log2_modulus)
    rho = value_mass
    big_k = _SMALL_COMPONENTS
    exact, tables = _component_tables(n, m)
    g = np.zeros(n + 1)
    g[1] = (rho + (1.0 - rho) / n) - 1.0  # F(1) = w(1): the last pair is a single-pair component
    with np.errstate(over="ignore", invalid="ignore"):
        for a, weight in enumerate(exact, start=2):  # every component size summed exactly
            s = np.arange(1, a)
            factor = np.where(s == 1, q * (rho + (1.0 - rho) / (n - a + 1)), q)  # q per further component, w(a) per single pair
            g[a] = float(np.sum(weight * (factor * (1.0 + g[a - s]) - 1.0)))
        if tables is not None:
            _extend(g, n, q, rho, big_k, *tables)
    value = float(g[n]) * (1 + _FLOAT_MARGIN)
    return value if math.isfinite(value) else math.inf


@lru_cache(maxsize=4)
def _component_tables(n: int, m: int) -> tuple[list[np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray] | None]:
    """The probabilities the recursion needs, which depend on ``(n, m)`` only (not on ``q`` or the value mass).

    For ``a <= 2K + 1``: ``p_s(a) Conn(s)`` for every ``s < a``. Beyond (``None`` when ``n <= 2K + 1``):
    the small components ``p_s(a) Conn(s)``, ``s <= K``; the remainders ``p_(a-j)(a)``, ``j <= K``; and
    ``(a - 2K - 1) C(a, K + 1)^(2 - m)``, which bounds the middle's probabilities together.
    """
    from scipy.special import gammaln  # imported where the bound is computed

    big_k = _SMALL_COMPONENTS
    counts = np.arange(n + 1, dtype=float)
    log_factorial = gammaln(counts + 1.0)  # log k!
    log_factorial_m = gammaln(m * counts + 1.0)  # log (m k)!

    def component(a: np.ndarray, s: np.ndarray) -> np.ndarray:
        """``C(a-1, s-1) C(a, s) / C(m a, m s)``: one vertex's component is a given closed set of size ``s``."""
        a, s = np.asarray(a, dtype=np.int64), np.asarray(s, dtype=np.int64)
        rest = a - s
        first = log_factorial[a - 1] - log_factorial[s - 1] - log_factorial[rest]
        second = log_factorial[a] - log_factorial[s] - log_factorial[rest]
        return np.exp(first + second - (log_factorial_m[a] - log_factorial_m[s] - log_factorial_m[rest]))

    connected = _connected_probabilities(m, big_k)
    exact = []
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(2, min(n, 2 * big_k + 1) + 1):
            s = np.arange(1, a)
            exact.append(component(np.full(s.size, a), s) * np.where(s > big_k, 1.0, connected[np.minimum(s, big_k)]))
        if n <= 2 * big_k + 1:
            return exact, None
        a = np.arange(2 * big_k + 2, n + 1)[:, None]
        sizes = np.arange(1, big_k + 1)[None, :]
        small = component(a, sizes) * connected[1 : big_k + 1][None, :]  # component of size s <= K
        remainder = component(a, a - sizes)  # component of size a - j, remainder j <= K
        log_binomial = log_factorial[a[:, 0]] - log_factorial[big_k + 1] - log_factorial[a[:, 0] - big_k - 1]
        middle = (a[:, 0] - 2 * big_k - 1) * np.exp((2 - m) * log_binomial)
    return exact, (small, remainder, middle)


def _extend(
    g: np.ndarray, n: int, q: float, rho: float, big_k: int, small: np.ndarray, remainder: np.ndarray, middle: np.ndarray
) -> None:
    """``G(a)`` for ``a > 2K + 1``: small components exactly, small remainders exactly, the middle bounded.

    While the recursion can amplify (``q`` times the small components' probabilities plus the
    middle's coefficient above 1/2) it is run step by step; beyond, every ``G(j)``, ``j > K``, is at
    most ``M``, the fixed point of ``M <= F + V M`` (``V <= 1/2``), and ``G(n) <= F(n) + V(n) M``.
    """
    a = np.arange(2 * big_k + 2, n + 1)[:, None]
    middle = middle * q
    weights = small * q
    weights[:, 0] *= rho + (1.0 - rho) / (n - a[:, 0] + 1)  # a single pair weighs w(a)
    fixed = weights.sum(axis=1) - small.sum(axis=1) + remainder @ (q - 1.0 + q * g[1 : big_k + 1]) + middle
    gain = weights.sum(axis=1) + middle  # coefficient of the largest G(j), j > K, in G(a)
    amplifying = np.flatnonzero(~(gain <= 0.5))
    last_step = 2 * big_k + 1 + (int(amplifying[-1]) + 1 if amplifying.size else 0)
    largest_middle = 0.0  # max of G(j) over K < j < a - K, updated as a grows
    for row, size in enumerate(range(2 * big_k + 2, min(n, last_step) + 1)):
        largest_middle = max(largest_middle, g[size - big_k - 1])
        recent = g[size - big_k : size][::-1]  # G(a - 1), ..., G(a - K)
        g[size] = fixed[row] + float(weights[row] @ recent) + middle[row] * largest_middle
    if n > last_step:
        tail = slice(last_step - 2 * big_k - 1, None)
        computed = float(np.max(g[big_k + 1 : last_step + 1]))
        most_gain = float(np.max(gain[tail]))
        bound = max(computed, (float(np.max(fixed[tail])) + most_gain * computed) / (1.0 - most_gain))
        g[n] = fixed[-1] + gain[-1] * bound


def _connected_probabilities(m: int, big_k: int) -> np.ndarray:
    """``Conn(s)`` for ``s <= K`` (index ``s``), rounded up by ``1e-12`` and capped at 1; index 0 unused."""
    connected = np.ones(big_k + 1)
    for s in range(2, big_k + 1):
        split = sum(
            math.exp(_log_comb(s - 1, t - 1) + _log_comb(s, t) - _log_comb(m * s, m * t)) * connected[t] for t in range(1, s)
        )
        connected[s] = min(1.0, max(0.0, 1.0 - split) + 1e-12)
    return connected


def _log_comb(top: int, bottom: int) -> float:
    return math.lgamma(top + 1) - math.lgamma(bottom + 1) - math.lgamma(top - bottom + 1)


def exact_share_distance(inputs: object, n_shares: int, modulus: int, noise: object = None) -> float:
    """The exact distance of the shuffled share multiset from its ideal, enumerated (tiny cases only, for tests).

    Without ``noise``: ``TV(P_x, U_(sum x))``. With ``noise`` (a probability vector over the residues
    modulo ``q``), every user's value is ``x_i + N_i`` with independent ``N_i`` of that law, and the
    distance is that of the mixtures, ``TV(E_N P_(x+N), E_N U_(sum (x+N)))`` (the averaged bound's
    quantity). Every share assignment is enumerated, and every share vector with the same total for
    the ideal; the multisets' probabilities are compared.

    Raises:
        InvalidParameterError: more than ``2^21`` outcomes to enumerate, or ``noise`` not a
            probability vector of length ``modulus``.

    Examples:
        >>> round(exact_share_distance([0, 1, 2], 2, 3), 4)
        0.0741
        >>> exact_share_distance([0, 1, 2], 2, 3, noise=[0.5, 0.5, 0.0]) < 0.0741
        True
    """
    owner = "exact_share_distance"
    values = check_integer_array(inputs, "inputs", owner, ndim=1, low=0)
    n_shares = check_integer(n_shares, "n_shares", owner, low=1)
    modulus = check_integer(modulus, "modulus", owner, low=2)
    n_users, total_shares = values.size, values.size * n_shares
    if noise is None:
        pmf = np.zeros(modulus)
        pmf[0] = 1.0
    else:
        pmf = check_array(noise, "noise", owner, ndim=1).astype(float)
        if pmf.size != modulus or not (np.all(pmf >= 0) and abs(float(pmf.sum()) - 1.0) <= 1e-9):
            raise invalid("noise", owner, f"a probability vector of length modulus={modulus}", pmf.tolist())
    support = int(np.count_nonzero(pmf))
    work = support**n_users * modulus ** (n_users * (n_shares - 1)) + modulus**total_shares
    if not (n_users >= 1 and values.max() < modulus and work <= _MAX_EXACT_OUTCOMES):
        constraint = f"a few residues below modulus with at most {_MAX_EXACT_OUTCOMES} share vectors to enumerate"
        raise invalid("inputs", owner, constraint, values.tolist())
    planted_keys, planted_mass, totals = [], [], np.zeros(modulus)
    for shift in _all_vectors(modulus, n_users):
        weight = float(np.prod(pmf[shift]))
        if weight > 0:
            noisy = np.mod(values + shift, modulus)
            keys, counts = _multiset_counts(_planted_vectors(noisy, n_shares, modulus), modulus)
            planted_keys.append(keys)
            planted_mass.append(weight * counts / counts.sum())
            totals[int(noisy.sum()) % modulus] += weight
    ideal_keys, ideal_mass = [], []
    for total in np.flatnonzero(totals):
        free = _all_vectors(modulus, total_shares - 1)
        ideal = np.concatenate([free, np.mod(int(total) - free.sum(axis=1), modulus)[:, None]], axis=1)
        keys, counts = _multiset_counts(ideal, modulus)
        ideal_keys.append(keys)
        ideal_mass.append(totals[total] * counts / counts.sum())
    keys = np.concatenate(planted_keys + ideal_keys)
    signed = np.concatenate(planted_mass + [-mass for mass in ideal_mass])
    _, where = np.unique(keys, return_inverse=True)
    return 0.5 * float(np.abs(np.bincount(where, weights=signed)).sum())


def _planted_vectors(values: np.ndarray, n_shares: int, modulus: int) -> np.ndarray:
    """Every share vector of the inputs (each user's shares uniform given their sum), one per row."""
    n_users = values.size
    free = _all_vectors(modulus, n_users * (n_shares - 1)).reshape(-1, n_users, n_shares - 1)
    last = np.mod(values[None, :] - free.sum(axis=2), modulus)[..., None]
    return np.concatenate([free, last], axis=2).reshape(free.shape[0], n_users * n_shares)


def _all_vectors(modulus: int, length: int) -> np.ndarray:
    if length == 0:
        return np.zeros((1, 0), dtype=np.int64)
    return np.indices((modulus,) * length, dtype=np.int64).reshape(length, -1).T


def _multiset_counts(vectors: np.ndarray, modulus: int) -> tuple[np.ndarray, np.ndarray]:
    ordered = np.sort(vectors, axis=1)
    keys = ordered @ (modulus ** np.arange(ordered.shape[1], dtype=np.int64))
    return np.unique(keys, return_counts=True)
