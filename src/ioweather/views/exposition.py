"""The Prometheus text exposition (version 0.0.4) of metric families given as plain data.

Written here rather than through prometheus_client's generate_latest(): that one validates and
escapes every name and label anew for every sample, ~20 µs a series, which is most of a scrape of
a few thousand series. The format is small: `# HELP` (backslash and newline escaped), `# TYPE`, one
line per series with label values escaped (backslash, double quote, newline), numbers as Go prints
them (prometheus_client's floatToGoString). tests/test_exporter_updates.py checks the text is
byte for byte what generate_latest writes for the same families.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.utils import floatToGoString

__all__ = ["Family", "render", "CONTENT_TYPE_LATEST"]

_LABEL = str.maketrans({"\\": "\\\\", "\n": "\\n", '"': '\\"'})
_HELP = str.maketrans({"\\": "\\\\", "\n": "\\n"})


@dataclass
class Family:
    """One metric family: `name` is the full name (counters end in `_total`); samples are
    (label values in the order of `labels`, value). Names and label names come from code."""

    name: str
    kind: str                      # "counter" or "gauge"
    help: str
    labels: tuple[str, ...] = ()
    samples: list[tuple[tuple[str, ...], float]] = field(default_factory=list)


def render(families: list[Family]) -> bytes:
    """The families, in the order given, as exposition text (UTF-8); labels in alphabetical order."""
    out: list[str] = []
    for f in families:
        out.append(f"# HELP {f.name} {f.help.translate(_HELP)}\n# TYPE {f.name} {f.kind}\n")
        order = sorted(range(len(f.labels)), key=lambda i: f.labels[i])
        names = [f.labels[i] for i in order]
        for values, v in f.samples:
            if names:
                inner = ",".join(f'{n}="{str(values[i]).translate(_LABEL)}"' for n, i in zip(names, order))
                out.append(f"{f.name}{{{inner}}} {floatToGoString(v)}\n")
            else:
                out.append(f"{f.name} {floatToGoString(v)}\n")
    return "".join(out).encode()
