"""Operations on one GraphFrame: squash, filter, inclusive, subtree sums, aggregate, unify.

Each takes a frame and returns a new frame (or its tables); GraphFrame's methods call them.
"""
