def _validate_numpy_version_for_hdf():
    return None
