#!/bin/sh
# System packages the tests use: Chromium (browser tests), R (reference densities),
# promtool (metrics validation), sysstat (iostat), gcc + Python headers (the C core),
# slurm-wlm + slurmdbd + munge (a real one-node Slurm cluster, tests/slurm_cluster.py),
# fio (ioweather bench), MPICH + autotools + zlib + MPICH's HDF5 (the I/O lab: `ioweather lab build`
# builds Darshan and IOR with them; docs/lab.md).
# Installs what is missing when run as root with apt-get; otherwise says what is
# missing (those tests then skip with a reason).
set -eu
PKGS="gcc python3-dev chromium r-base-core prometheus sysstat slurm-wlm slurmdbd munge fio
  mpich libmpich-dev autoconf automake libtool make zlib1g-dev libhdf5-mpich-dev"
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing system packages:$missing" >&2
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
else
  echo "note: system packages missing (tests that need them will skip):$missing" >&2
fi
