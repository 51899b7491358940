from perflake.frame.graph import Graph  # noqa: F401
