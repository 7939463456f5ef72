"""The small C core: timed system calls. Built by setup.py from *_core.c files."""
