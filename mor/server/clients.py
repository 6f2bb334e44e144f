"""What a client pastes to reach a running `mor serve`: the lines `serve` prints when it
starts, one recipe per engine, with the server's URL and warehouse name filled in. Tokens are
never printed: a server with a token file shows where one goes (`<TOKEN>`).

The README's "Engines on `mor serve`" section shows the same recipes. Tests run them: mor's,
pyiceberg's and DuckDB's (tests/server/test_client_recipes.py), mor in Spark
(tests/spark/test_rest_spark.py) and Iceberg's Spark (tests/interop/test_rest_java.py); not
Trino's, which is not on the test machine.
"""

from __future__ import annotations

TOKEN_PLACEHOLDER = "<TOKEN>"
ICEBERG_EXTENSIONS = ("httpfs", "avro", "iceberg")  # DuckDB loads these; iceberg's start-up needs avro


def client_recipes(url: str, warehouse: str, secured: bool, name: str = "mor") -> dict[str, str]:
    """Engine -> the configuration that attaches it to the server at `url` as catalog `name`."""
    token = TOKEN_PLACEHOLDER if secured else None
    py_token = f', token="{token}"' if token else ""
    duck_auth = f"TOKEN '{token}'" if token else "AUTHORIZATION_TYPE 'none'"
    spark = [
        f"spark.sql.catalog.{name}=org.apache.iceberg.spark.SparkCatalog",
        f"spark.sql.catalog.{name}.type=rest",
        f"spark.sql.catalog.{name}.uri={url}",
        f"spark.sql.catalog.{name}.warehouse={warehouse}",
    ]
    trino = ["connector.name=iceberg", "iceberg.catalog.type=rest", f"iceberg.rest-catalog.uri={url}"]
    trino.append(f"iceberg.rest-catalog.warehouse={warehouse}")
    if token:
        spark.append(f"spark.sql.catalog.{name}.token={token}")
        trino += ["iceberg.rest-catalog.security=OAUTH2", f"iceberg.rest-catalog.oauth2.token={token}"]
    return {
        "mor": f'import mor\ncatalog = mor.load_catalog(uri="{url}", warehouse="{warehouse}"{py_token})',
        "mor in Spark": (
            "import mor.spark\n"
            "mor.spark.register(spark)\n"
            f'df = spark.read.format("mor").option("uri", "{url}").option("warehouse", "{warehouse}")'
            + (f'.option("token", "{token}")' if token else "")
            + '.load("db.events")'
        ),
        "pyiceberg": (
            "from pyiceberg.catalog import load_catalog\n"
            f'catalog = load_catalog("{name}", type="rest", uri="{url}", warehouse="{warehouse}"{py_token})'
        ),
        "duckdb": (
            "-- extensions from PyPI (pip install duckdb-extension-iceberg duckdb-extension-avro duckdb-extension-httpfs),\n"
            "-- loaded by path with allow_unsigned_extensions: no network needed (see the README)\n"
            f"ATTACH '{warehouse}' AS {name} (TYPE iceberg, ENDPOINT '{url}', {duck_auth});"
        ),
        "spark (Iceberg's runtime jar; spark-defaults.conf or --conf)": "\n".join(spark),
        f"trino (etc/catalog/{name}.properties)": "\n".join(trino),
    }


def client_configuration(url: str, warehouse: str, secured: bool) -> str:
    """The recipes as `serve` prints them."""
    recipes = client_recipes(url, warehouse, secured)
    blocks = [f"{engine}:\n" + "\n".join("    " + line for line in text.splitlines()) for engine, text in recipes.items()]
    return "clients, ready to paste:\n" + "\n".join(blocks)
