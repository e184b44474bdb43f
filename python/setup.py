"""Builds the a2a package: pure Python over the CPython extension a2a._core, linked to liba2a.

liba2a is looked for, in order, in:
  $A2A_PREFIX        an installed prefix (cmake --install ... --prefix DIR): DIR/include, DIR/lib*
  pkg-config a2a     (PKG_CONFIG_PATH=DIR/lib/pkgconfig for an installed prefix)
  this source tree   ../include and $A2A_BUILD_DIR (default ../build)/worker, after a cmake build
The extension finds liba2a at run time through its RPATH (the directory it was linked from).

There is deliberately no pyproject.toml: pip then builds with the setuptools and wheel already
installed (Debian's python3-setuptools, python3-wheel) and needs no package index.
"""
import os
import subprocess
import sysconfig

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def _has_lib(d):
    return os.path.exists(os.path.join(d, "liba2a.so"))


def _pkg_config():
    try:
        inc, lib = (subprocess.run(["pkg-config", f"--variable={v}", "a2a"], check=True,
                                   capture_output=True, text=True).stdout.strip()
                    for v in ("includedir", "libdir"))
    except (OSError, subprocess.CalledProcessError):
        return None
    return (inc, lib) if inc and _has_lib(lib) else None


def find_liba2a():
    """(include dir, library dir) of liba2a."""
    prefix = os.environ.get("A2A_PREFIX")
    if prefix:
        multiarch = sysconfig.get_config_var("MULTIARCH") or ""
        for sub in ("lib", "lib64", os.path.join("lib", multiarch)):
            if _has_lib(os.path.join(prefix, sub)):
                return os.path.join(prefix, "include"), os.path.join(prefix, sub)
        raise SystemExit(f"a2a: no liba2a.so under A2A_PREFIX={prefix} (lib/, lib64/)")
    found = _pkg_config()
    if found:
        return found
    build = os.environ.get("A2A_BUILD_DIR", os.path.join(HERE, "..", "build"))
    inc, lib = os.path.join(HERE, "..", "include"), os.path.join(build, "worker")
    if os.path.exists(os.path.join(inc, "a2a.h")) and _has_lib(lib):
        return os.path.abspath(inc), os.path.abspath(lib)
    raise SystemExit("a2a: liba2a not found: build it first (cmake -S . -B build && cmake --build "
                     "build), or set A2A_PREFIX to an installed prefix, or A2A_BUILD_DIR")


include_dir, lib_dir = find_liba2a()

setup(
    name="a2a",
    version="0.1.0",
    description="alltoallv as a networked service: HCCL's all_to_all_v for numpy and torch",
    long_description=open(os.path.join(HERE, "README.md")).read(),
    long_description_content_type="text/markdown",
    packages=["a2a"],
    package_data={"a2a": ["py.typed", "_core.pyi"]},
    python_requires=">=3.8",
    install_requires=["numpy"],
    extras_require={"torch": ["torch"]},
    ext_modules=[
        # depends: a2a.h changed (a field added) rebuilds the module, never an old object
        Extension("a2a._core", ["a2a/_core.c"], include_dirs=[include_dir],
                  depends=[os.path.join(include_dir, "a2a.h")],
                  library_dirs=[lib_dir], runtime_library_dirs=[lib_dir], libraries=["a2a"],
                  extra_compile_args=["-Wall", "-Wextra", "-O2"]),
    ],
    zip_safe=False,
)
