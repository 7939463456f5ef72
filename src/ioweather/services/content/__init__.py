"""What the file systems hold: content snapshots (fsstats). See docs/architecture.md.
"""
