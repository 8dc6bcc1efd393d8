"""Snapshots: the publisher, its reader, cursors, and the object-store backends."""
