"""Real data that ships with privsum, and a way to embed your own texts like it.

* `load_wordnet_glosses`: WordNet 3.0 glosses labelled by lexicographer file (``noun.animal``,
  ``noun.food``, ...), embedded as unit-norm 384-d vectors; a fixed train/test split.
* `load_vocabulary`: about 21,000 common English words embedded the same way, for decoding classes.
* `embed_texts`: the embedding model behind both (optional extra ``privsum[text]``, no PyTorch).

Everything loads from files inside the package: nothing is fetched at run time.
"""

from privsum.datasets.text import EMBEDDING_DIMENSION, embed_texts
from privsum.datasets.wordnet import LabelledEmbeddings, Vocabulary, load_vocabulary, load_wordnet_glosses

__all__ = [
    "EMBEDDING_DIMENSION",
    "LabelledEmbeddings",
    "Vocabulary",
    "embed_texts",
    "load_vocabulary",
    "load_wordnet_glosses",
]
