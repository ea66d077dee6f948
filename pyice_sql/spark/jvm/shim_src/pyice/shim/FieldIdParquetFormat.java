package pyice.shim;

import org.apache.hadoop.mapreduce.Job;
import org.apache.parquet.hadoop.ParquetOutputFormat;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's Parquet file source, writing through {@link FieldIdWriteSupport}: an Iceberg field id on every node of
 * each file's schema, list elements and map keys and values included, which Spark's writer cannot express (its ids
 * come from StructField metadata, and an array's element or a map's key has none). pyice_sql writes the data files
 * of tables with list or map columns with it ({@code format("pyice.shim.FieldIdParquetFormat")}, the ids as the
 * write option {@link FieldIdWriteSupport#IDS}); reads and everything else are Spark's own.
 */
public class FieldIdParquetFormat extends ParquetFileFormat {
    private static final long serialVersionUID = 1L;

    @Override
    public OutputWriterFactory prepareWrite(SparkSession session, Job job,
                                            scala.collection.immutable.Map<String, String> options,
                                            StructType dataSchema) {
        OutputWriterFactory factory = super.prepareWrite(session, job, options, dataSchema);
        // read by each task's ParquetOutputFormat from the job's configuration, after Spark set its own
        ParquetOutputFormat.setWriteSupportClass(job, FieldIdWriteSupport.class);
        return factory;
    }

    @Override
    public String toString() {
        return "Parquet (Iceberg field ids)";
    }
}
