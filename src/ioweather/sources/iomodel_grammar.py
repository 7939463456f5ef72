"""The io-model's parameter grammar: access sizes, memory and file layouts, cache states and
operations as `ioweather iomodel run` spells them (METHODS.md section 2.1)."""

from __future__ import annotations

from dataclasses import dataclass

from ioweather.errors import UserError
from ioweather.sources.iomodel_cache import CACHE_STATES, core
from ioweather.units import parse_size

MIN_SIZE, MAX_SIZE = 1, 16 << 20
# The paper's access sizes: powers of 4 up to 1 KiB, then powers of 2 up to 16 MiB.
SIZE_LADDER = (1, 4, 16, 64, 256) + tuple(1024 << k for k in range(15))
OPS = ("R", "W")
LAYOUT_KINDS = ("off0", "seq", "stride", "reverse", "rnd", "rnd8")


def compact_size(n: int) -> str:
    """8388608 -> '8MiB'; sizes that are not whole KiB/MiB/GiB stay in bytes."""
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return str(n)


@dataclass(frozen=True)
class Layout:
    """An access pattern over a region (the memory buffer or the file)."""

    kind: str
    gap: int = 0

    def __str__(self) -> str:
        return f"{self.kind}:{compact_size(self.gap)}" if self.kind in ("stride", "rnd8") or self.gap else self.kind

    @property
    def core_kind(self) -> int:
        c = core()
        return {"off0": c.OFF0, "seq": c.STRIDE, "stride": c.STRIDE, "reverse": c.REVERSE,
                "rnd": c.RND, "rnd8": c.RND8}[self.kind]


_LAYOUT_HELP = "use off0, seq, stride:S, reverse, reverse:S, rnd or rnd8:S (S a size such as 8MiB)"


def parse_layout(text: str) -> Layout:
    name, _, arg = str(text).strip().partition(":")
    name = name.lower()
    if name not in LAYOUT_KINDS:
        raise UserError(f"unknown layout {text!r}: {_LAYOUT_HELP}")
    if name in ("stride", "rnd8"):
        if not arg:
            raise UserError(f"layout {name} needs a size, e.g. {name}:8MiB")
        return Layout(name, parse_size(arg))
    if arg and name == "reverse":
        return Layout(name, parse_size(arg))
    if arg:
        raise UserError(f"layout {name} takes no size (got {text!r}): {_LAYOUT_HELP}")
    return Layout(name)


def _split(text: str) -> list[str]:
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise UserError(f"empty list {text!r}")
    return list(dict.fromkeys(items))


def parse_layouts(text: str) -> list[Layout]:
    return list(dict.fromkeys(parse_layout(t) for t in _split(text)))


def check_size(n: int) -> int:
    if not MIN_SIZE <= n <= MAX_SIZE:
        raise UserError(f"access size {compact_size(n)} is out of range: sizes go from 1 B to 16 MiB")
    return n


def parse_sizes(text: str) -> list[int]:
    """Access sizes: a list (`1,4k,1MiB`), `all` (the paper's 20 sizes), a range `LO..HI`
    (the paper's sizes within it) or a geometric range `LO..HI:xF`."""
    out: list[int] = []
    for item in _split(text):
        if item.lower() == "all":
            out.extend(SIZE_LADDER)
            continue
        if ".." not in item:
            out.append(check_size(parse_size(item)))
            continue
        lo_text, _, rest = item.partition("..")
        hi_text, _, factor_text = rest.partition(":")
        lo, hi = check_size(parse_size(lo_text)), check_size(parse_size(hi_text))
        if lo > hi:
            raise UserError(f"size range {item!r} is empty: {lo} B > {hi} B")
        if factor_text:
            if not factor_text.lower().startswith("x") or not factor_text[1:].isdigit() or int(factor_text[1:]) < 2:
                raise UserError(f"malformed size range {item!r}: the step is written x2, x4, ... (e.g. 1..16MiB:x4)")
            f, s = int(factor_text[1:]), lo
            while s <= hi:
                out.append(s)
                s *= f
        else:
            out.extend(s for s in SIZE_LADDER if lo <= s <= hi)
    if not out:
        raise UserError(f"no access size in {text!r}")
    return list(dict.fromkeys(out))


def _parse_choices(text: str, allowed: tuple[str, ...], what: str, hint: str) -> list[str]:
    items = [t.lower() if allowed[0].islower() else t.upper() for t in _split(text)]
    for t in items:
        if t not in allowed:
            raise UserError(f"unknown {what} {t!r}: use {hint}")
    return list(dict.fromkeys(items))


def parse_caches(text: str) -> list[str]:
    return _parse_choices(text, CACHE_STATES, "cache state", "discard, cached or uncached")


def parse_ops(text: str) -> list[str]:
    return _parse_choices(text, OPS, "operation", "R (read) or W (write)")
