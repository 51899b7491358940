from perflake.frame.graph import Node  # noqa: F401

try:
    from perflake.frame.graph import MultiplePathError, traversal_order  # noqa: F401
except ImportError:
    def traversal_order(node):
        return (node.frame, getattr(node, "_hatchet_nid", -1))

    class MultiplePathError(Exception):
        pass
