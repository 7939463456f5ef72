"""libdarshan-util through CFFI, as PyDarshan's `darshan.backend.cffi_backend` reaches it, without importing it.

Why written here: PyDarshan's package (`darshan/__init__.py` imports `darshan.report`) and its
`cffi_backend` import pandas at module level, and importing `darshan.backend.cffi_backend` runs both:
~0.55 s of pandas before `jobs ingest` forks its pool (issue 40: one of the two cores idles meanwhile),
for a reader that uses no pandas. This module takes PyDarshan's own parts that import nothing heavy,
by file location, not as `darshan.*` modules (which would run the package's __init__):
`backend/api_def_c.py` (the C declarations, with the APXC and APMPI add-ins that `cffi_backend` appends,
read from `apxc.py` and `apmpi.py` as text: they import `cffi_backend` themselves) and
`discover_darshan.py` (the library's discovery). On those it makes the same `cffi.FFI()`, finds the same
libdarshan-util, checks its version as PyDarshan does, and gives the handful of backend functions the
reader uses, each as PyDarshan's does it (tests/test_darshan_cffi.py compares them on every public log).

No pandas, no numpy here.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import os

import cffi


def _pydarshan_dir() -> str:
    """The installed `darshan` package's directory (found, not imported)."""
    spec = importlib.util.find_spec("darshan")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'darshan' (PyDarshan, which bundles libdarshan-util)",
                                  name="darshan")
    return list(spec.submodule_search_locations)[0]


def _load_by_location(name: str, path: str):
    """Run one of PyDarshan's files as a module of our own name (not `darshan.*`: no package __init__)."""
    spec = importlib.util.spec_from_file_location(f"ioweather.sources._pydarshan_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _constant(path: str, name: str) -> str | None:
    """The string assigned to `name` at the top of a Python file, read without running it (None if none)."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value
    return None


_DIR = _pydarshan_dir()
_api_def_c = _load_by_location("api_def_c", os.path.join(_DIR, "backend", "api_def_c.py"))
_discover = _load_by_location("discover_darshan", os.path.join(_DIR, "discover_darshan.py"))

# cffi_backend appends the optional modules' declarations (`structdefs` of apxc.py, then of apmpi.py, each
# skipped if it fails), so the FFI is the one PyDarshan makes
_addins = "".join(filter(None, (_constant(os.path.join(_DIR, "backend", f), "structdefs")
                                for f in ("apxc.py", "apmpi.py"))))

ffi = cffi.FFI()
ffi.cdef(_api_def_c.load_darshan_header(_addins))
libdutil = _discover.find_utils(ffi, None)


def _check_version() -> None:
    """PyDarshan's check_version: the library's major.minor.patch must be the package's (the declarations
    above are the package's); it reads the package's version from `darshan` itself, read here from its file."""
    lib_version = ffi.string(libdutil.darshan_log_get_lib_version()).decode("utf-8")
    package_version = _constant(os.path.join(_DIR, "__init__.py"), "__darshanutil_version__")
    if package_version is None:  # not where PyDarshan 3.x keeps it: nothing to compare with
        return
    if package_version.split(".")[0:3] != lib_version.split(".")[0:3]:
        raise _discover.DarshanVersionError(target_version=".".join(package_version.split(".")[0:3]),
                                            provided_version=lib_version, msg="This version of PyDarshan")


_check_version()

#: module -> its record's C type, as PyDarshan's `_structdefs` (the modules this project reads)
_structdefs = {
    "DXT_MPIIO": "struct dxt_file_record **",
    "DXT_POSIX": "struct dxt_file_record **",
    "HEATMAP": "struct darshan_heatmap_record **",
    "H5F": "struct darshan_hdf5_file **",
    "H5D": "struct darshan_hdf5_dataset **",
    "LUSTRE": "struct darshan_lustre_record **",
    "MPI-IO": "struct darshan_mpiio_file **",
    "PNETCDF_FILE": "struct darshan_pnetcdf_file **",
    "PNETCDF_VAR": "struct darshan_pnetcdf_var **",
    "POSIX": "struct darshan_posix_file **",
    "DFS": "struct darshan_dfs_file **",
    "DAOS": "struct darshan_daos_object **",
    "STDIO": "struct darshan_stdio_file **",
}


def log_open(filename: str) -> dict:
    """A log handle in PyDarshan's dict ({"handle", "modules", "name_records"}); a NULL handle if it fails."""
    return {"handle": libdutil.darshan_log_open(filename.encode()), "modules": None, "name_records": None}


def log_close(log: dict) -> None:
    libdutil.darshan_log_close(log["handle"])


def log_get_job(log: dict) -> dict:
    """The job record, as PyDarshan's log_get_job: uid, times, nprocs, jobid, run_time, log_ver, metadata."""
    jobrec = ffi.new("struct darshan_job *")
    libdutil.darshan_log_get_job(log["handle"], jobrec)
    j = jobrec[0]
    job = {"uid": j.uid, "start_time_sec": j.start_time_sec, "start_time_nsec": j.start_time_nsec,
           "end_time_sec": j.end_time_sec, "end_time_nsec": j.end_time_nsec, "nprocs": j.nprocs, "jobid": j.jobid}
    runtime = ffi.new("double *")
    libdutil.darshan_log_get_job_runtime(log["handle"], j, runtime)
    job["run_time"] = runtime[0]
    # the format version is the first thing in the handle's structure (PyDarshan reads it so too)
    job["log_ver"] = ffi.string(ffi.cast("char *", log["handle"])).decode("utf-8")
    md = {}
    for kv in ffi.string(j.metadata).decode("utf-8").split("\n")[:-1]:
        k, v = kv.split("=", maxsplit=1)
        md[k] = v
    job["metadata"] = md
    return job


def log_get_modules(log: dict) -> dict:
    """name -> {"len", "ver", "idx", "partial_flag"}, cached in the handle, as PyDarshan's log_get_modules
    (a module without a name raises RuntimeError, from ffi.string of NULL, as there)."""
    if log["modules"] is not None:
        return log["modules"]
    mods = ffi.new("struct darshan_mod_info **")
    cnt = ffi.new("int *")
    libdutil.darshan_log_get_modules(log["handle"], mods, cnt)
    modules = {}
    for i in range(cnt[0]):
        m = mods[0][i]
        modules[ffi.string(m.name).decode("utf-8")] = {"len": m.len, "ver": m.ver, "idx": m.idx,
                                                       "partial_flag": bool(m.partial_flag)}
    log["modules"] = modules
    libdutil.darshan_free(mods[0])
    return modules


@functools.lru_cache(maxsize=32)
def counter_names(mod_name: str, fcnts: bool = False, special: str = "") -> list[str] | None:
    """The module's integer (`fcnts`: floating-point) counter names from libdarshan-util's own tables,
    None for a module that has none, as PyDarshan's counter_names."""
    if mod_name == "MPI-IO":
        mod_name = "MPIIO"
    f = "f_" if fcnts else ""
    end = f"{mod_name.upper()}_{f.upper()}{special.upper()}NUM_INDICES"
    try:
        var = getattr(libdutil, f"{mod_name.lower()}_{f}{special.lower()}counter_names")
    except Exception:  # as PyDarshan's: whatever the library lacks is no table
        return None
    if not var:
        return None
    names = []
    i = 0
    while True:
        name = ffi.string(var[i]).decode("utf-8")
        if name == end:
            return names
        names.append(name)
        i += 1


@functools.lru_cache(maxsize=32)
def fcounter_names(mod_name: str) -> list[str] | None:
    return counter_names(mod_name, fcnts=True)
