"""The Spark side of pyice_sql: jobs that read and write Iceberg files on the executors."""
