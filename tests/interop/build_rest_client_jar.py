"""Builds the HTTP client that Iceberg Java's REST catalog needs, for the oracle's runtime jar.

The runtime jar the oracle gets from PyPI has its shaded Apache HttpClient 5 classes
(`org/apache/iceberg/shaded/org/apache/hc/...`) stripped out, as it has Jackson's, so
`RESTCatalog` fails with NoClassDefFoundError. This puts them back from Debian's
libhttpclient5-java / libhttpcore5-java (5.2.1), relocated by the oracle's own relocator
(../shared/tools/iceberg-oracle/relocate_jackson.py, pointed at `org/apache/hc`).

Iceberg 1.10 was built against HttpClient 5.5: its only use of a class 5.2 lacks,
`TlsSocketStrategy`, is on the path taken when `rest.client.tls.configurer-impl` is set (never,
here), but the JVM's verifier still loads that interface. An empty interface of that name,
compiled here with javac, satisfies it.

usage: python build_rest_client_jar.py <oracle dir> <out.jar>
"""

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

DEBIAN_JARS = ["/usr/share/java/httpclient5.jar", "/usr/share/java/httpcore5.jar", "/usr/share/java/httpcore5-h2.jar"]
STUB_PACKAGE = "org.apache.iceberg.shaded.org.apache.hc.client5.http.ssl"
STUB = f"package {STUB_PACKAGE}; public interface TlsSocketStrategy {{}}\n"


def main(oracle_dir: str, out: str) -> None:
    missing = [j for j in DEBIAN_JARS if not os.path.exists(j)]
    if missing:
        sys.exit(f"missing {missing}: install Debian's libhttpclient5-java and libhttpcore5-java")
    sys.path.insert(0, oracle_dir)
    import relocate_jackson as relocate

    relocate.SRC_SLASH, relocate.DST_SLASH = b"org/apache/hc", b"org/apache/iceberg/shaded/org/apache/hc"
    relocate.SRC_DOT, relocate.DST_DOT = b"org.apache.hc", b"org.apache.iceberg.shaded.org.apache.hc"
    relocate.PREFIX = "org/apache/hc/"
    partial = f"{out}.partial"
    if relocate.main(["relocate", partial, *DEBIAN_JARS]) != 0:
        sys.exit("relocating HttpClient 5 failed")
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "TlsSocketStrategy.java"
        source.write_text(STUB)
        subprocess.run(["javac", "--release", "11", "-d", tmp, str(source)], check=True)
        entry = STUB_PACKAGE.replace(".", "/") + "/TlsSocketStrategy.class"
        with zipfile.ZipFile(partial, "a", zipfile.ZIP_DEFLATED) as jar:
            jar.write(Path(tmp) / entry, entry)
    os.replace(partial, out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
