"""Servers the test suite starts and stops itself, on loopback only (PostgreSQL, S3)."""
