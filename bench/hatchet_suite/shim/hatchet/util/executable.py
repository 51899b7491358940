import shutil


def which(name):
    return shutil.which(name)
