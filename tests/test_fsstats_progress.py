"""Issue 20, item 17: fsstats' progress line is redrawn at most ~10 times a second on a terminal, with
a smoothed rate (9,074 redraws in 2.3 s and rates swinging 0/s <-> 297,262/s before)."""

from __future__ import annotations

import io
import re

import numpy as np

from ioweather.commands.fsstats import ProgressLine


def test_redrawn_at_most_ten_times_a_second_with_a_smoothed_rate():
    t = [0.0]
    out = io.StringIO()
    bar = ProgressLine(tty=True, clock=lambda: t[0], stream=out)
    # 9,074 reports in 2.3 s, as the walk made them: bursts of a directory's entries, then nothing.
    rng = np.random.default_rng(0)
    entries = 0
    for i in range(9074):
        t[0] = 2.3 * (i + 1) / 9074
        entries += int(rng.choice([0, 0, 0, 150]))
        bar(entries, 0, 3)
    redraws = out.getvalue().count("\r\x1b[K")
    assert 20 <= redraws <= 23  # 2.3 s / 0.1 s
    rates = [float(m.replace(",", "")) for m in re.findall(r"\(([\d,]+)/s now", out.getvalue())]
    true_rate = entries / 2.3
    # After the first second, the shown rate stays within 30 % of the true one; unsmoothed 0.1 s windows
    # of this walk swing by a factor of several.
    assert all(0.7 * true_rate < r < 1.3 * true_rate for r in rates[10:]), rates
    bar.close()
    assert out.getvalue().endswith("\r\x1b[K")


def test_not_a_terminal_prints_a_line_every_every_s():
    t = [0.0]
    out = io.StringIO()
    bar = ProgressLine(every_s=30, tty=False, clock=lambda: t[0], stream=out)
    for i in range(1, 1001):
        t[0] = i * 0.1  # 100 s
        bar(i * 10, 0, 0)
    assert out.getvalue().count("\n") == 3
