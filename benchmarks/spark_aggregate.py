"""The "sum over every column" that the Spark read benchmarks time, as Spark SQL expressions,
so that Spark 4 (mor) and Spark 3.5 (Iceberg-Spark, through the oracle's environment) run the
very same aggregate. Every column is touched: numbers summed, strings by length, timestamps by
their microsecond part (the whole sum would overflow a long). Stdlib only: both environments
import it."""

SUM_EVERY_COLUMN = [
    "count(1) AS rows",
    "sum(id) AS id",
    "sum(length(category)) AS category",
    "sum(value) AS value",
    "sum(unix_micros(ts) % 1000000) AS ts",
    "sum(length(payload)) AS payload",
]


def sum_every_column(df):  # type: ignore[no-untyped-def]
    return df.selectExpr(*SUM_EVERY_COLUMN)
