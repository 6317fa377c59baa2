"""Finding and loading the C library libgpuprofile.so.0 (one loader for the
gpu_profile and gpufl packages, so both always talk to the same copy).

Candidates, in order (docs/python.md): $GPU_PROFILE_LIBRARY (alone: a wrong
path is an error, never a silent fall-through), the package folder itself,
the library directory recorded at install (_install.py, by `cmake --install`
or by `pip install` with GPU_PROFILE_PREFIX), the source tree's build/
folder, the standard library folders, then the system loader.
"""

import ctypes
import os
import sysconfig

LIB_NAME = "libgpuprofile.so.0"


def standard_dirs():
    """Where `cmake --install` puts the library with the usual prefixes
    (/usr/local first: scripts/install.sh), before ldconfig has run."""
    multiarch = sysconfig.get_config_var("MULTIARCH")
    dirs = []
    for prefix in ("/usr/local", "/usr"):
        dirs.append(prefix + "/lib")
        if multiarch:
            dirs.append(prefix + "/lib/" + multiarch)
        dirs.append(prefix + "/lib64")
    return dirs


def candidates():
    """(paths, explicit): the paths tried, and whether the env chose them."""
    env = os.environ.get("GPU_PROFILE_LIBRARY")
    if env:
        return [env], True
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.join(here, LIB_NAME)]  # a copy that ships the library
    try:
        from . import _install  # written by `cmake --install` or pip
        paths.append(os.path.join(_install.LIBDIR, LIB_NAME))
    except ImportError:
        pass
    paths.append(os.path.normpath(os.path.join(here, "..", "..", "build", LIB_NAME)))
    for d in standard_dirs():
        p = os.path.join(d, LIB_NAME)
        if p not in paths:
            paths.append(p)
    paths.append(LIB_NAME)  # the system loader (LD_LIBRARY_PATH, ld.so.cache)
    return paths, False


def load(package):
    """(CDLL, path) of the first candidate that loads; ImportError naming
    every path tried and what to do when none does."""
    paths, explicit = candidates()
    errors = []
    for p in paths:
        if os.sep in p and not os.path.exists(p):
            errors.append("%s: no such file" % p)
            continue
        try:
            return ctypes.CDLL(p), p
        except OSError as e:
            errors.append("%s: %s" % (p, e))
    if explicit:
        hint = "fix or unset GPU_PROFILE_LIBRARY"
    else:
        hint = ("build the C library (cmake -S . -B build && cmake --build build), "
                "install it (cmake --install build), or set "
                "GPU_PROFILE_LIBRARY to the path of %s" % LIB_NAME)
    raise ImportError("%s: cannot load the C library %s (tried: %s); %s"
                      % (package, LIB_NAME, "; ".join(errors), hint))


lib, library_path = load("gpu_profile")

# C enums are int-sized with gcc and clang on Linux.
c_enum = ctypes.c_int


def declare(name, restype, *argtypes):
    """The C function `name` of the library, with its prototype set."""
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


def c_string(name, value, what="a str", none_ok=False):
    """value (str, bytes or a path) as the bytes a `const char *` takes;
    None stays None when none_ok.  TypeError "<name> must be <what>" for
    anything else, ValueError for an embedded NUL (C would cut it there)."""
    if value is None and none_ok:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if isinstance(value, str):
        value = value.encode()
    elif not isinstance(value, bytes):
        raise TypeError("%s must be %s, not %r" % (name, what, value))
    if b"\0" in value:
        raise ValueError("%s contains a NUL character" % name)
    return value
