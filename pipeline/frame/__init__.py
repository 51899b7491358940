"""The GraphFrame and what it is made of: Graph and Node, the node/metric tables, per-node values.

graphframe is the Hatchet-style object users hold; each further capability lives in ops/, render/,
analytics/ or interop/ and works on the tables (tables, node_values, node_matrix).
"""
