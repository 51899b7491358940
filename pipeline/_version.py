"""perflake's version: a leaf module (imports nothing), so any module can read it without loading the package."""

__version__ = "0.1.0"
