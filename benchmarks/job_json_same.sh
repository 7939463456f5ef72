#!/bin/bash
# No answer changes (issue 40): `ioweather job --json LOG` (stdout, stderr, exit code) of every *.darshan under
# ../shared and tests/data/lab, run by two src/ trees, compared byte for byte.
#   benchmarks/job_json_same.sh BEFORE_SRC [AFTER_SRC]     (AFTER_SRC: this checkout's src)
# Prints DIFF lines and "N logs, D differences"; exit 1 when any differ. ~4 min for 108 logs on 2 cores.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
B=$(cd "$1" && pwd); A=$(cd "${2:-$here/src}" && pwd)
py=${PYTHON:-$here/.venv/bin/python}
# both trees failing alike would compare equal: no interpreter, no comparison
[ -x "$py" ] || { echo "job_json_same: no Python at $py (set PYTHON=, e.g. a checkout's .venv/bin/python)" >&2; exit 2; }
for t in "$B" "$A"; do
  PYTHONPATH="$t" "$py" -c "import ioweather.cli" || { echo "job_json_same: $py cannot import ioweather from $t" >&2; exit 2; }
done
out=$(mktemp -d /tmp/job-json-same.XXXX)
find "$here/../shared" "$here/tests/data/lab" -name '*.darshan' 2>/dev/null | sort > "$out/logs"
one() {  # tree-tag src log
  k=$(echo "$3" | md5sum | cut -c1-12)
  (cd /tmp && HOME="$OUT/home-$1" IOWEATHER_HOME="$OUT/home-$1" PYTHONPATH="$2" timeout 120 "$PY" -m ioweather \
     job --json "$3" > "$OUT/$1.$k.out" 2> "$OUT/$1.$k.err"; echo $? > "$OUT/$1.$k.rc")
}
export -f one; export OUT="$out" PY="$py"
xargs -P 2 -I{} bash -c 'one b "$0" "{}"; one a "$1" "{}"' "$B" "$A" < "$out/logs"
n=0; d=0
while read -r log; do
  k=$(echo "$log" | md5sum | cut -c1-12); n=$((n + 1))
  for s in out err rc; do cmp -s "$out/b.$k.$s" "$out/a.$k.$s" || { echo "DIFF $s $log"; d=$((d + 1)); }; done
done < "$out/logs"
echo "$n logs, $d differences ($out)"
[ "$d" = 0 ]
