package pyice.shim;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.parquet.hadoop.ParquetOutputFormat;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's Parquet file source as pyice_sql writes data files with it ({@code format("pyice.shim.DataFileParquetFormat")},
 * where Spark's data source lookup can load the shim by name); reads and everything else are Spark's own. Two changes
 * to a write's job:
 * <ul>
 * <li>Given the write option {@link DataFileWriteSupport#IDS} or {@link NanCounts#FIELDS}, its tasks write through
 * {@link DataFileWriteSupport}. The first: an Iceberg field id on every node of each file's schema, list elements and
 * map keys and values included, which Spark's writer cannot express (its ids come from StructField metadata, and an
 * array's element or a map's key has none); pyice_sql gives it for tables with list or map columns. The second: each
 * file's NaN counts, counted by the task writing it, in its footer; pyice_sql gives it for tables with float or
 * double columns.</li>
 * <li>The job's Hadoop configuration leaves out YARN's defaults ({@link #withoutYarnDefaults}). Spark's file writer
 * puts that configuration inside every write task, each of its ~1,000 properties with its source as a GZIP stream of
 * its own: ~6-7 ms to read back in each task, ~5 ms to write per job. YARN's defaults are 438 of them, and a task
 * writing files never reads one. (The copy Spark's write statistics carry is built where this class cannot reach.)</li>
 * </ul>
 */
public class DataFileParquetFormat extends ParquetFileFormat {
    private static final long serialVersionUID = 1L;

    /** The resource YARN's defaults come from (loaded into every Configuration once YARN's classes are). */
    static final String YARN_DEFAULTS = "yarn-default.xml";

    @Override
    public OutputWriterFactory prepareWrite(SparkSession session, Job job,
                                            scala.collection.immutable.Map<String, String> options,
                                            StructType dataSchema) {
        OutputWriterFactory factory = super.prepareWrite(session, job, options, dataSchema);
        Configuration conf = job.getConfiguration();
        if (conf.get(DataFileWriteSupport.IDS) != null || conf.get(NanCounts.FIELDS) != null) {
            // read by each task's ParquetOutputFormat from the job's configuration, after Spark set its own
            ParquetOutputFormat.setWriteSupportClass(job, DataFileWriteSupport.class);
        }
        withoutYarnDefaults(conf);
        return factory;
    }

    /**
     * Removes from {@code conf} (a write job's own copy) the properties whose only source is YARN's defaults: YARN's
     * service and client settings. A property set anywhere else (a site file, Spark's {@code spark.hadoop.*}, the
     * write's options) stays. Returns how many went.
     */
    public static int withoutYarnDefaults(Configuration conf) {
        List<String> yarn = new ArrayList<>();
        for (Map.Entry<String, String> property : conf) {
            String[] sources = conf.getPropertySources(property.getKey());
            if (sources != null && sources.length == 1 && YARN_DEFAULTS.equals(sources[0])) {
                yarn.add(property.getKey());
            }
        }
        for (String key : yarn) {
            conf.unset(key);
        }
        return yarn.size();
    }

    @Override
    public String toString() {
        return "Parquet (pyice data files)";
    }
}
