from perflake.graph import Frame  # noqa: F401
