"""vitbook: the code behind *Vision Transformers, Computed*.

Rooms, with one-way arrows between them:

* ``model``, ``calc``, ``analysis``, ``patches``: the Vision Transformer and the arithmetic
  about it;
* ``data``, ``train``: datasets and the training loop;
* ``experiments``: the book's training experiments as plain functions (one run, one seed), and
  ``experiments.stats``, the rule that turns seeds into printed numbers;
* ``runs``: those experiments cached and frozen in ``frozen/`` (through ``engine.cached``);
* ``plot``, ``explore``: the house style, and the shared pieces of the explorers' data;
* ``engine``: registry, cache, frozen runs, rendering, facts, verification and the command line
  (knows nothing of ViTs);
* ``figures``: one module per chapter, which uses all of the above; only the engine imports them;
* ``site``: the MkDocs macros and hooks, editions, provenance cards, formulas, the PDF; reads
  what the engine wrote and imports no figure module.
"""

__version__ = "0.1.0"
