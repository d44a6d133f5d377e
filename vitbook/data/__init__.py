"""The book's data: a real photograph, real digits, and seeded synthetic datasets.

Everything here loads from installed packages or is generated from a seed; nothing
is downloaded. One module per source, so that a figure depends only on what it uses.
"""
