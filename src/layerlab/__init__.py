"""layerlab: the helper package behind the book.

The notebooks import this package; it never imports anything from the book. Each module owns
one thing (see README.md, "Package map").

Used by every chapter (00–11).
"""

__version__ = "0.1.0"
