"""The site layer: MkDocs page macros (facts, figures, equations, citations) and build hooks.

It reads what the engine wrote (``figures/facts.json``, the rendered files) and never the other
way round: ``vitbook.engine`` does not import this package.
"""
