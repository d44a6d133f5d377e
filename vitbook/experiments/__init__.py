"""The book's training runs as plain functions: no engine, no cache, no drawing.

Each module holds the runs of one experiment. A function trains one configuration with one seed
and returns plain, picklable results (numbers, ``History`` objects, small models on the CPU), so
a notebook can call it directly and ``vitbook.runs`` can cache it per (configuration, seed).
``vitbook.experiments.stats`` holds the one rule that turns seeds into the book's numbers.
"""
