"""A short tour of the shared privacy accountant.

Run with ``python examples/accountant_tour.py``. Prints the exact privacy profile of shuffled binary
randomized response, amplification by shuffling, and a ledger composed three ways.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from privsum.accounting import (
    GuaranteeEvent,
    PrivacyAccountant,
    PrivacyGuarantee,
    PrivacyProfile,
    ProfileEvent,
    randomized_response_profile,
    shuffle_amplification,
    shuffle_amplification_closed_form,
)


def shuffled_rr_profile(n_users: int, flip_probability: float) -> PrivacyProfile:
    """Exact view of shuffled binary RR when every other user holds 0."""
    others = stats.binom.pmf(np.arange(n_users + 1), n_users - 1, flip_probability)
    shifted = np.r_[0.0, others[:-1]]
    p = (1 - flip_probability) * others + flip_probability * shifted
    q = flip_probability * others + (1 - flip_probability) * shifted
    return PrivacyProfile(p, q)


def main() -> None:
    n_users, delta = 100_000, 1e-6
    epsilon0 = 2.0
    print(f"Amplification by shuffling of a {epsilon0}-LDP randomizer, n={n_users}, delta={delta:g}:")
    print(f"  closed form (FMT21):     epsilon = {shuffle_amplification_closed_form(epsilon0, delta, n_users).epsilon:.4f}")
    print(f"  numerical (FMT21 pair):  epsilon = {shuffle_amplification(epsilon0, delta, n_users).epsilon:.4f}")
    flip = 1.0 / (1.0 + math.exp(epsilon0))
    print(f"  exact, binary RR:        epsilon = {shuffled_rr_profile(n_users, flip).epsilon(delta):.4f}")

    print("\nOne user in 768 instances of an 0.05-LDP randomized response, composed:")
    accountant = PrivacyAccountant()
    accountant.compose(ProfileEvent.at_delta(randomized_response_profile(0.05), 0.0), count=768, label="RR instances")
    accountant.compose(GuaranteeEvent(PrivacyGuarantee(1.0)), visible_to_model=False, label="label report")
    for method in ("basic", "advanced", "pld"):
        print(f"  {method:>8}: epsilon = {accountant.epsilon(delta, threat_model='model', method=method):.4f} at delta={delta:g}")
    print()
    print(accountant.report(delta))


if __name__ == "__main__":
    main()
