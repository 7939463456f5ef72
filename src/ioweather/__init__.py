"""ioweather: is the file system slow right now, why was my job's I/O slow, what is our workload."""

__version__ = "0.1.0"
