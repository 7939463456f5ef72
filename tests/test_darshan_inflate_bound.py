"""The deflate bound `check_inflation` uses to skip counting small zlib regions (issue 40): a region of n
compressed bytes never inflates beyond DEFLATE_MAX_RATIO * n + DEFLATE_MATCH, so one that cannot reach its
limit is not inflated to be counted. Checked on the most compressible input there is (zeros, every level),
one stream and several back to back (a region holds one stream per writer)."""

from __future__ import annotations

import zlib

import pytest

from ioweather.sources.darshan_log import DEFLATE_MATCH, DEFLATE_MAX_RATIO, INFLATE_FLOOR, INFLATE_RATIO


@pytest.mark.parametrize("level", [1, 6, 9])
@pytest.mark.parametrize("n", [1, 258, 4096, 1 << 20, INFLATE_FLOOR, INFLATE_FLOOR + 1, 4 * INFLATE_FLOOR])
def test_zeros_never_inflate_beyond_the_bound(level, n):
    z = zlib.compress(b"\0" * n, level)
    assert n <= DEFLATE_MAX_RATIO * len(z) + DEFLATE_MATCH
    streams = z * 3  # three writers' streams
    assert 3 * n <= DEFLATE_MAX_RATIO * len(streams) + DEFLATE_MATCH


def test_a_region_that_could_pass_the_limit_is_still_counted():
    """The most a region just past the skip can hold is beyond the limit: it must be inflated and counted."""
    z = zlib.compress(b"\0" * (INFLATE_FLOOR + (1 << 20)), 9)
    limit = max(INFLATE_FLOOR, INFLATE_RATIO * len(z))
    assert DEFLATE_MAX_RATIO * len(z) + DEFLATE_MATCH > limit  # not skipped: check_inflation inflates it
