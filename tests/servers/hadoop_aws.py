"""Hadoop's `s3a` filesystem for the Spark tests: the hadoop-aws jar and the AWS SDK bundle it
needs, and the session settings that point `s3a://` at the moto server (tests/servers/s3.py).

pyspark's pip package carries no hadoop-aws, and this machine reaches no Maven repository. PyPI
does ship the two jars, inside the source distribution of `sagemaker-pyspark` (1.4.5, under
`deps/jars/`): `hadoop_aws_jars()` downloads it once with pip, checks each jar's SHA-256 and
keeps the jars in `.cache/hadoop-aws/` of the checkout (git-ignored), so later runs need no
network.

hadoop-aws 3.3.1 runs on the Hadoop 3.4/3.5 client of Spark 4 with settings of its own age:
numbers where Hadoop 3.5 writes durations with units ("60s" fails to parse as a long), and the
SDK-v1 credentials provider (3.5 names the SDK-v2 ones).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from tests.servers.s3 import ACCESS_KEY, REGION, SECRET_KEY, S3Server

CHECKOUT = Path(__file__).resolve().parents[2]
CACHE = CHECKOUT / ".cache" / "hadoop-aws"
DISTRIBUTION = "sagemaker-pyspark==1.4.5"
MEMBER_FOLDER = "deps/jars/"
JARS = {  # file name -> SHA-256
    "hadoop-aws-3.3.1.jar": "6be50ad8a8b445d2802381b085b2a3ede5c29d353450a6a21f16b2fefa962b6e",
    "aws-java-sdk-bundle-1.11.901.jar": "b87175b32a16544cc1b37cf40390eb375833e62bed67f8ce6cde4b7ad6429ead",
}
DOWNLOAD_TIMEOUT = 900  # seconds: about 180 MB from PyPI; bounds a hung download, not a speed check


def hadoop_aws_jars() -> list[Path]:
    """The two jars, from the cache or downloaded into it (RuntimeError saying why not)."""
    if not all(_verified(CACHE / name) for name in JARS):
        _download()
    return [CACHE / name for name in JARS]


def s3a_settings(server: S3Server) -> dict[str, str]:
    """Spark settings (`spark.hadoop.fs.s3a.*`) reaching `server` through s3a, for the driver and
    the executors alike (mor's delete loader on the executors reads the same Hadoop settings)."""
    fs = {
        "endpoint": server.endpoint,
        "endpoint.region": REGION,
        "access.key": ACCESS_KEY,
        "secret.key": SECRET_KEY,
        "aws.credentials.provider": "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
        "path.style.access": "true",
        "connection.ssl.enabled": "false",
        # Hadoop 3.5's defaults for these carry units, which hadoop-aws 3.3.1 cannot parse.
        "connection.timeout": "60000",
        "connection.establish.timeout": "30000",
        "connection.request.timeout": "0",
        "connection.idle.time": "60000",
        "connection.ttl": "300000",
        "threads.keepalivetime": "60",
        "multipart.purge.age": "86400",
        "retry.interval": "500ms",
    }
    return {f"spark.hadoop.fs.s3a.{key}": value for key, value in fs.items()}


def _verified(path: Path) -> bool:
    return path.is_file() and _sha256(path) == JARS[path.name]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _download() -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mor-hadoop-aws-") as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", DISTRIBUTION, "-d", scratch]
        run = subprocess.run(command, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT)
        archives = sorted(Path(scratch).glob("*.tar.gz"))
        if run.returncode != 0 or not archives:
            raise RuntimeError(f"could not download {DISTRIBUTION} for hadoop-aws: {run.stderr[-2000:]}")
        with tarfile.open(archives[0]) as archive:
            for member in archive.getmembers():
                name = member.name.rsplit("/", 1)[-1]
                if name in JARS and member.name.endswith(MEMBER_FOLDER + name):
                    source = archive.extractfile(member)
                    assert source is not None, member.name
                    partial = CACHE / (name + ".partial")
                    partial.write_bytes(source.read())
                    partial.replace(CACHE / name)  # whole jars only, for a run that stops midway
    bad = [name for name in JARS if not _verified(CACHE / name)]
    if bad:
        raise RuntimeError(f"{DISTRIBUTION} did not hold the expected {', '.join(bad)} (missing or a different SHA-256)")
