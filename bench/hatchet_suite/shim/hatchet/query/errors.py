from perflake.errors import (  # noqa: F401
    BadNumberNaryQueryArgs,
    InvalidQueryFilter,
    InvalidQueryPath,
    MultiIndexModeMismatch,
)


class RedundantQueryFilterWarning(Warning):
    pass
