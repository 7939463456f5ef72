"""The lab's tools: Darshan's runtime, IOR, mdtest, MPI's compiler and launcher, and its own programs.

A site has them already (`module load darshan ior`): `darshan-config`, `ior` and `mdtest` on PATH are
used as they are. Elsewhere `ioweather lab build` builds Darshan 3.5.0 and IOR 4.0.0 from the source
archives in ../shared/third_party (never copied into the checkout) into a cache outside it
($IOWEATHER_LAB_CACHE, default ~/.cache/ioweather-lab): about 3 minutes on 2 cores.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from ioweather.encoding import Answer
from ioweather.errors import UserError

DARSHAN_ARCHIVE = "darshan-3.5.0.tar.gz"
IOR_ARCHIVE = "ior-4.0.0.tar.gz"
PROGRAMS = Path(__file__).with_name("programs")
# Debian's MPICH build of HDF5 (libhdf5-mpich-dev); PnetCDF's Debian build is OpenMPI's only (docs/lab.md).
HDF5_INCLUDE = Path("/usr/include/hdf5/mpich")
HDF5_LIB = Path("/usr/lib/x86_64-linux-gnu/hdf5/mpich")


def cache_dir() -> Path:
    return Path(os.environ.get("IOWEATHER_LAB_CACHE") or Path.home() / ".cache" / "ioweather-lab")


def default_sources() -> Path:
    """../shared/third_party beside the checkout (the package lives in CHECKOUT/src/ioweather)."""
    env = os.environ.get("IOWEATHER_LAB_SOURCES")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[4].parent / "shared" / "third_party"


@dataclass
class Toolchain(Answer):
    """Where each tool of the lab is, and where it came from ("PATH" or "cache")."""

    origin: str
    darshan_lib: str
    ior: str
    mdtest: str
    mpiexec: str
    mpicc: str
    cc: str
    #: the lab's compiled programs by name (lab_posix, lab_posix_nompi, lab_mpiio, lab_hdf5 when HDF5 is there)
    programs: dict[str, str] = field(default_factory=dict)
    #: why an optional part is missing (e.g. {"lab_hdf5": "..."})
    missing: dict[str, str] = field(default_factory=dict)


def _prefix_tools(prefix: Path) -> tuple[str, str, str] | None:
    lib, ior, mdtest = prefix / "lib" / "libdarshan.so", prefix / "bin" / "ior", prefix / "bin" / "mdtest"
    if lib.is_file() and os.access(ior, os.X_OK) and os.access(mdtest, os.X_OK):
        return str(lib), str(ior), str(mdtest)
    return None


def _from_path() -> tuple[str, str, str] | None:
    """Darshan, IOR and mdtest as a site's modules put them on PATH (libdarshan.so beside darshan-config)."""
    config, ior, mdtest = shutil.which("darshan-config"), shutil.which("ior"), shutil.which("mdtest")
    if not (config and ior and mdtest):
        return None
    lib = Path(config).resolve().parent.parent / "lib" / "libdarshan.so"
    return (str(lib), ior, mdtest) if lib.is_file() else None


def _mpi() -> tuple[str, str, str]:
    mpiexec, mpicc, cc = shutil.which("mpiexec"), shutil.which("mpicc"), shutil.which("cc") or shutil.which("gcc")
    if not (mpiexec and mpicc and cc):
        raise UserError("the lab needs MPI's mpicc and mpiexec and a C compiler on PATH "
                        "(Debian: apt-get install mpich libmpich-dev; scripts/install-system-deps.sh)")
    return mpiexec, mpicc, cc


def find(cache: Path | None = None, *, compile_programs: bool = True) -> Toolchain:
    """The tools on PATH if a site has them all, else the cache's build; UserError naming `lab build` if neither."""
    cache = cache or cache_dir()
    mpiexec, mpicc, cc = _mpi()
    found, origin = _from_path(), "PATH"
    if found is None:
        found, origin = _prefix_tools(cache / "prefix"), "cache"
    if found is None:
        raise UserError(f"no Darshan runtime, IOR and mdtest on PATH nor in {cache}: run `ioweather lab build` first")
    tools = Toolchain(origin, *found, mpiexec=mpiexec, mpicc=mpicc, cc=cc)
    if compile_programs:
        _compile(tools, cache / "bin")
    return tools


def _compile(tools: Toolchain, bindir: Path) -> None:
    """Compile the lab's C programs into `bindir`, each binary named by its source's and command's hash (built
    once per version)."""
    bindir.mkdir(parents=True, exist_ok=True)
    h5 = ["-I", str(HDF5_INCLUDE), f"-L{HDF5_LIB}", f"-Wl,-rpath,{HDF5_LIB}"]
    recipes = {
        "lab_posix": ([tools.mpicc, "-DLAB_MPI"], "lab_posix.c", []),
        "lab_posix_nompi": ([tools.cc], "lab_posix.c", []),
        "lab_mpiio": ([tools.mpicc], "lab_mpiio.c", []),
        "lab_hdf5": ([tools.mpicc, *h5[:2]], "lab_hdf5.c", [*h5[2:], "-lhdf5"]),
    }
    for name, (compiler, source, libs) in recipes.items():
        if name == "lab_hdf5" and not (HDF5_INCLUDE / "hdf5.h").is_file():
            tools.missing[name] = f"no MPICH build of HDF5 ({HDF5_INCLUDE}/hdf5.h; apt-get install libhdf5-mpich-dev)"
            continue
        src = PROGRAMS / source
        # a binary is named by its source's bytes and its command, not kept by times: a checkout's files get the
        # clone's time, which can be older than a binary built from another version of the source; and checkouts
        # sharing the cache (worktrees, branches) each find their own binary, never one another's rebuilt over it
        stamp = hashlib.sha256(src.read_bytes() + "\0".join([*compiler, *libs]).encode()).hexdigest()[:16]
        out = bindir / f"{name}-{stamp}"
        if not out.exists():
            part = bindir / f".{name}-{stamp}.{os.getpid()}"
            done = subprocess.run([*compiler, "-O2", "-o", str(part), str(src), *libs], capture_output=True, text=True)
            if done.returncode:
                part.unlink(missing_ok=True)
                raise UserError(f"cannot compile {source}: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
            # renamed into place whole: a lab starting it meanwhile never runs a half-written binary
            os.replace(part, out)
        tools.programs[name] = str(out)


@dataclass
class Build(Answer):
    """What `lab build` did: where the tools are and whether it built them now."""

    built: bool
    cache: str
    toolchain: Toolchain
    log: str | None


def build(cache: Path | None = None, sources: Path | None = None, *, force: bool = False,
          jobs: int = 2, step=lambda what: None) -> Build:
    """Build Darshan and IOR from `sources` into `cache`/prefix unless a site's tools are on PATH or the
    cache has them (`force`: build anyway). The build's output goes to `cache`/build.log."""
    cache = cache or cache_dir()
    sources = sources or default_sources()
    if not force and (_from_path() or _prefix_tools(cache / "prefix")):
        return Build(False, str(cache), find(cache), None)
    for archive in (DARSHAN_ARCHIVE, IOR_ARCHIVE):
        if not (sources / archive).is_file():
            raise UserError(f"no {archive} in {sources} (the third-party sources; --sources DIR or $IOWEATHER_LAB_SOURCES)")
    _mpi()
    for tool in ("autoconf", "automake", "libtoolize", "make"):
        if not shutil.which(tool):
            raise UserError(f"building the lab needs {tool} (apt-get install autoconf automake libtool make)")
    prefix, work, log = cache / "prefix", cache / "src", cache / "build.log"
    work.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        def sh(cmd: list[str], cwd: Path) -> None:
            out.write(f"$ {' '.join(cmd)}  (in {cwd})\n")
            out.flush()
            if subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT).returncode:
                raise UserError(f"lab build failed at `{' '.join(cmd[:2])}` in {cwd}: see {log}")

        for archive in (DARSHAN_ARCHIVE, IOR_ARCHIVE):
            with tarfile.open(sources / archive) as tar:
                tar.extractall(work, filter="data")
        darshan = work / DARSHAN_ARCHIVE.removesuffix(".tar.gz")
        step("Darshan: prepare")
        sh(["./prepare.sh"], darshan)
        (darshan / "build").mkdir(exist_ok=True)
        step("Darshan: configure")
        # the log path from the environment, no job id variable: the lab names each log itself (DARSHAN_LOGFILE)
        sh(["../configure", f"--prefix={prefix}", "--with-log-path-by-env=DARSHAN_LOGPATH", "--with-jobid-env=NONE",
            "CC=mpicc", "--disable-darshan-util"], darshan / "build")
        step("Darshan: make")
        sh(["make", f"-j{jobs}"], darshan / "build")
        sh(["make", "install"], darshan / "build")
        ior = work / IOR_ARCHIVE.removesuffix(".tar.gz")
        step("IOR: bootstrap")
        sh(["./bootstrap"], ior)
        step("IOR: configure")
        sh(["./configure", f"--prefix={prefix}", "CC=mpicc"], ior)
        step("IOR: make")
        sh(["make", f"-j{jobs}"], ior)
        sh(["make", "install"], ior)
    return Build(True, str(cache), find(cache), str(log))
