"""The C core is built by the package's own build: only gcc and the Python headers are needed.

Each file in src/ioweather/_native/ named *_core.c becomes one extension module
ioweather._native.<name>, so a new timed-syscall module needs no edit here.
"""
from pathlib import Path

from setuptools import Extension, setup

native = Path("src/ioweather/_native")
ext_modules = [
    Extension(
        f"ioweather._native.{c.stem}",
        sources=[str(c)],
        extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter"],
    )
    for c in sorted(native.glob("*_core.c"))
]

setup(ext_modules=ext_modules)
