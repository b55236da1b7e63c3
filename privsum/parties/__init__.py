"""Deployable parties of the shuffle protocols: a client, a shuffler and an analyzer over the wire format.

A `Deployment` fixes the protocol's calibrated public parameters and the wire configuration;
`Client` turns one user's input into that user's upload (bytes), `Shuffler` collects uploads
from identified senders and releases anonymous permuted batches, `Analyzer` absorbs batches and
returns the estimate with the guarantee for the participants it received. The parties are written
once for all protocols: a protocol states what they need (`~privsum.shuffle.ShuffleProtocol`'s
``public_parameters``, ``wire_instances``, ``sender_cap``, ``encode_users``); `protocol_classes`
lists those carried (the bit sums, the real and vector sums, the one-round clipped sums (scalar, vector,
sparse), the shuffled KDE over bit sums and over a shuffled vector sum (`VectorSumKDEProtocol`), and
the classifier's label round (`LabelRound`) and its joint class sum (`JointClassKDEProtocol`);
`ClassifierRounds` runs the classifier's training as a label round (labels randomized, or in the
clear) and one KDE round per class, or as one joint round). The byte format is
`privsum.wire` (``docs/wire-format.md``); the HTTP services are `privsum.serve`.
"""

from privsum.parties.analyzer import Analyzer
from privsum.parties.classifier import ClassifierRounds, LabelRound
from privsum.parties.client import Client
from privsum.parties.deployment import DEFAULT_EXCEED_PROBABILITY, Deployment, protocol_classes, register_protocol
from privsum.parties.kde_joint import JointClassKDEProtocol
from privsum.parties.kde_vector import VectorSumKDEProtocol
from privsum.parties.shuffler import Shuffler

__all__ = [
    "DEFAULT_EXCEED_PROBABILITY",
    "Analyzer",
    "ClassifierRounds",
    "Client",
    "Deployment",
    "JointClassKDEProtocol",
    "LabelRound",
    "Shuffler",
    "VectorSumKDEProtocol",
    "protocol_classes",
    "register_protocol",
]
