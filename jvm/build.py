"""Build mor's Spark delete functions (jvm/src) into mor/spark/jars/mor-deletes.jar.

Needs a JDK (javac) and the installed pyspark, whose jars are the classpath: nothing is
downloaded. The classes target Java 8 (`javac --release 8`), so the one jar runs on Spark 3.5 and
4 alike. The jar's entries are sorted and dated 1980-01-01, so a rebuild from the same source
gives the same bytes.

    python jvm/build.py            # rebuild the shipped jar
    python jvm/build.py --check    # rebuild into a temporary folder; fail if a class differs
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ROOT / "jvm" / "src"
JAR = ROOT / "mor" / "spark" / "jars" / "mor-deletes.jar"
EPOCH = (1980, 1, 1, 0, 0, 0)


def pyspark_jars() -> Path:
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    if not jars.is_dir():
        raise SystemExit(f"pyspark at {jars.parent} has no jars folder")
    return jars


def compile_classes(out: Path) -> dict[str, bytes]:
    """The class files of jvm/src, by their path in the jar."""
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit("javac not found: building mor's Spark functions needs a JDK")
    sources = sorted(str(p) for p in SOURCES.rglob("*.java"))
    command = [javac, "--release", "8", "-Xlint:all,-options,-path", "-Werror", "-encoding", "UTF-8",
               "-cp", str(pyspark_jars() / "*"), "-d", str(out), *sources]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"javac failed:\n{done.stdout}{done.stderr}")
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*.class"))}


def write_jar(classes: dict[str, bytes], jar: Path) -> None:
    jar.parent.mkdir(parents=True, exist_ok=True)
    manifest = b"Manifest-Version: 1.0\r\nCreated-By: mor jvm/build.py\r\n\r\n"
    with zipfile.ZipFile(jar, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in [("META-INF/MANIFEST.MF", manifest), *sorted(classes.items())]:
            z.writestr(zipfile.ZipInfo(name, EPOCH), data, zipfile.ZIP_DEFLATED)


def shipped_classes(jar: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(jar) as z:
        return {n: z.read(n) for n in z.namelist() if n.endswith(".class")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="fail if the shipped jar's classes are not the source's")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        classes = compile_classes(Path(tmp))
    if not args.check:
        write_jar(classes, JAR)
        print(f"wrote {JAR.relative_to(ROOT)}: {len(classes)} classes")
        return 0
    shipped = shipped_classes(JAR) if JAR.exists() else {}
    differ = sorted(n for n in classes.keys() | shipped.keys() if classes.get(n) != shipped.get(n))
    if differ:
        print(f"{JAR.relative_to(ROOT)} is not built from jvm/src (run python jvm/build.py): {', '.join(differ)}", file=sys.stderr)
        return 1
    print(f"{JAR.relative_to(ROOT)} matches jvm/src ({len(classes)} classes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
