"""The Spark engine: session routing, runtime and JVM shim, reading and writing tables with Spark
jobs, row-level execution, procedures and DDL."""
