from perflake.frame.graph import Frame  # noqa: F401
