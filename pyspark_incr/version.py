"""The package's version, in a ground module so every room can read it without importing the package's facade."""

__version__ = "0.1.0"
