"""Iceberg on-disk format: metadata JSON, manifests, manifest lists, content files.

Pure logic over plain data (plus fastavro for Avro); no engine, no pyarrow compute.
"""
