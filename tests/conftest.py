"""Test configuration: hypothesis runs derandomised so every run uses the same examples."""

from hypothesis import settings

settings.register_profile("privsum", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("privsum")
