"""Server-side telemetry: live sources, importers of recorded histories, and the glue to the store.

Live sources (base.Source; one module each, raw readings only):
    diskstats   /proc/diskstats                 lustre     /proc/fs/lustre, /sys/fs/lustre
    nfs         /proc/self/mountstats           capacity   statvfs, `lfs df`
    host        /proc/stat, /proc/meminfo       gpfs       `mmpmon -p` fs_io_s
Importers (raw Wide/Long chunks; `importers` holds their interface and each kind's --help, KINDS):
    lmt         LMT MySQL/MariaDB or SQLite     iostat_json  `iostat -x -t -o JSON`
    tts         pytokio HDF5                    csv_long     time,target,metric,value
    mmperfmon   GPFS `mmperfmon query` text     lfsdf        archived `lfs df` runs
    lctl        `lctl dl -t` archives           lctl-params  `lctl get_param` captures (lctl_source)
    (textfiles: the text members of a file, .gz, tar/.tgz or directory, for the text archives)
`lustre` is lctl_source.LctlLustre: one `lctl get_param` a tick (parsed by lctl_params, which
imports nothing heavy), or the /proc and /sys reader (lustre.py) where lctl is not installed.
Glue, not sources: runner (each source in a thread with a deadline), synthetic (a Lustre-like tree
for tests and benchmarks). Turning readings and chunks into the store's rows is the services'
(services/telemetry/).
"""
