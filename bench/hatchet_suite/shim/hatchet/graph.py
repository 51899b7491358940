from perflake.graph import Graph  # noqa: F401
