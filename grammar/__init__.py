"""The privspec grammar (``privspec.lark``), shipped as package data."""
