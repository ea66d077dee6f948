"""Shared fixtures: one local SparkSession for the whole run, a fresh warehouse per test."""
from __future__ import annotations

import os
import time

import pytest

os.environ["TZ"] = "UTC"  # PySpark turns TIMESTAMP values into naive datetimes in the process zone
time.tzset()


@pytest.fixture(scope="session")
def spark():
    from pyice_sql.spark.runtime import local_session

    session = local_session("pyice-sql-tests")
    yield session
    session.stop()


@pytest.fixture
def warehouse(tmp_path):
    return str(tmp_path / "warehouse")


@pytest.fixture
def ice(spark, warehouse):
    import pyice_sql

    return pyice_sql.connect(spark, warehouse=warehouse)
