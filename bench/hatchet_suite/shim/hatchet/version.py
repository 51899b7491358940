try:
    from perflake._version import __version__  # noqa: F401
except ImportError:
    from perflake import __version__  # noqa: F401
