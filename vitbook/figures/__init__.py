"""One module per chapter: ``chNN_<slug>.py`` computes with the rest of vitbook and draws.

Only the engine's discovery imports these modules.
"""
