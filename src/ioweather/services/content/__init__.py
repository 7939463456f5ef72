"""What the file systems hold. See docs/architecture.md.

    fsstats  content snapshots: walk a tree into one, keep it (file, HTML report, store label), compare two, list
"""
