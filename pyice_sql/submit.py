"""spark-submit entry point: `spark-submit [--conf spark.pyice.…] <this file> script.sql [options]`.

Takes the same arguments as `pyice-sql run` (or `doctor`) and reads catalog settings from the job's Spark
conf (`spark.pyice.catalog.<name>.warehouse`, ...). `pyice-sql doctor` prints this file's path.
spark-submit runs it as a plain script, so its folder (the package itself) is first on sys.path:
it is removed, or pyice_sql's own `io` package would shadow the standard library's.
"""
import os
import sys

if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

from pyice_sql.cli import main  # noqa: E402

if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.exit(main(argv if argv[:1] == ["doctor"] else ["run", *argv]))
