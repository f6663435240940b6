"""Sentence embedders: the functions from text to vector, and what is known of them.

Concordia hands every entity's memory bank a `sentence_embedder:
Callable[[str], np.ndarray]`, and everything here accepts any such
function. The package holds all that concerns one: its vectors and their
cache (vectors.py), its name and fingerprint (identity.py), the thresholds
measured for it (records.py, kept by identity) and their resolution
(thresholds.py), a user's function named on the command line (user.py)
and the background warming of its cache (warmer.py). An `Embedder`
(value.py) holds one function with all of that and checks its vectors
(check.py); it is built once where a command or a run starts and passed
down, and it stays a plain text-to-vector callable to Concordia. Only
this package resolves an embedder's identity and thresholds; its
consumers read them from the value.
"""

from crsec_concordia.embedding.check import BadVectors
from crsec_concordia.embedding.identity import named
from crsec_concordia.embedding.value import (Embedder, identity_for, of,
                                             thresholds_of)
from crsec_concordia.embedding.vectors import (DIMENSION, CachedEmbedder,
                                               MiniLMEmbedder,
                                               SentenceEmbedder, cached,
                                               embedder_of, encode,
                                               pair_similarity,
                                               shared_embedder, similarity)

__all__ = ["DIMENSION", "BadVectors", "CachedEmbedder", "Embedder",
           "MiniLMEmbedder", "SentenceEmbedder", "cached", "embedder_of",
           "encode", "identity_for", "named", "of", "pair_similarity",
           "shared_embedder", "similarity", "thresholds_of"]
