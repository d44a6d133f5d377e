"""The book engine: registry, dependency-aware cache, rendering, facts and CLI.

It runs functions and stores what they return; it knows nothing about Vision Transformers.
"""

from .build import Variant
from .cache import cached
from .explorer import ExplorerData
from .registry import Recorder, facts, figure

__all__ = ["ExplorerData", "Recorder", "Variant", "cached", "facts", "figure"]
