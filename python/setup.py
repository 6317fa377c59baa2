"""pip's hook into the build (metadata: pyproject.toml): records where the C
library was installed, so the pip-installed packages load that copy.

GPU_PROFILE_PREFIX=P (the prefix of `cmake --install build --prefix P`) at
`pip install` time writes gpu_profile/_install.py with LIBDIR = the folder
under P holding libgpuprofile.so.0, as `cmake --install` does for its own
copy of the packages; a prefix without the library fails the build with a
message naming it.  Without the variable nothing is recorded and the
packages search the standard places (docs/python.md).
"""

import os
import sysconfig

from setuptools import setup
from setuptools.command.build_py import build_py

LIB_NAME = "libgpuprofile.so.0"


def installed_libdir(prefix):
    """The folder under prefix that holds the library (GNUInstallDirs' lib,
    lib64 or lib/<multiarch>), or SystemExit naming what was looked at."""
    subdirs = ["lib", "lib64"]
    multiarch = sysconfig.get_config_var("MULTIARCH")
    if multiarch:
        subdirs.append(os.path.join("lib", multiarch))
    tried = [os.path.join(os.path.abspath(prefix), d) for d in subdirs]
    for d in tried:
        if os.path.exists(os.path.join(d, LIB_NAME)):
            return d
    raise SystemExit("GPU_PROFILE_PREFIX=%s: no %s in %s; install the library "
                     "there first (cmake --install build --prefix %s) or unset "
                     "GPU_PROFILE_PREFIX" % (prefix, LIB_NAME, ", ".join(tried), prefix))


class BuildPy(build_py):
    def run(self):
        super().run()
        prefix = os.environ.get("GPU_PROFILE_PREFIX")
        path = os.path.join(self.build_lib, "gpu_profile", "_install.py")
        if not prefix:
            if os.path.exists(path):  # left in build/ by an earlier prefixed build
                os.remove(path)
            return
        with open(path, "w") as f:
            f.write("# Written by pip install with GPU_PROFILE_PREFIX: where "
                    "libgpuprofile.so.0 was installed.\nLIBDIR = %r\n"
                    % installed_libdir(prefix))


setup(cmdclass={"build_py": BuildPy})
