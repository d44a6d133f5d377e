"""vitbook: the code behind *Vision Transformers, Computed*.

Rooms, with one-way arrows between them:

* ``model``, ``calc``, ``analysis``: the Vision Transformer and the arithmetic about it;
* ``data``, ``train``, ``runs``: datasets, the training loop and the book's cached runs;
* ``plot``: the house style and drawing helpers;
* ``engine``: registry, cache, rendering, facts and the command line (knows nothing of ViTs);
* ``figures``: one module per chapter, which uses all of the above.
"""

__version__ = "0.1.0"
