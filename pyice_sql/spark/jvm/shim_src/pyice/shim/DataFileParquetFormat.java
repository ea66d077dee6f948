package pyice.shim;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.mapreduce.Job;
import org.apache.parquet.hadoop.ParquetOutputFormat;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

/**
 * Spark's Parquet file source as pyice_sql writes and reads table files with it
 * ({@code format("pyice.shim.DataFileParquetFormat")}, where Spark's data source lookup can load the shim by name);
 * the reading and writing themselves are Spark's own. Two changes to a write's job:
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
 * And one to a scan's ({@link #forScan}): Spark's Parquet reader copies the scan's Hadoop configuration for every file
 * it opens (a {@code JobConf} per file, ~1,000 properties with their sources) and opens each through Hadoop's
 * checksummed local file system (a status call and a failed open of a {@code .crc} side file per file): a third of a
 * 10,000-file scan's task time went to the copies, a tenth to the checksum file system.
 */
public class DataFileParquetFormat extends ParquetFileFormat {
    private static final long serialVersionUID = 1L;

    /** The resource YARN's defaults come from (loaded into every Configuration once YARN's classes are). */
    static final String YARN_DEFAULTS = "yarn-default.xml";
    /** The resource MapReduce's defaults come from (loaded once {@code JobConf} is, as every Parquet read loads it). */
    static final String MAPREDUCE_DEFAULTS = "mapred-default.xml";

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
        return withoutDefaults(conf, Set.of(YARN_DEFAULTS));
    }

    /**
     * A scan's Hadoop configuration ({@code conf}, Spark's copy for this scan) as a cheaper one to copy per file and to
     * open files with:
     * <ul>
     * <li>without the properties whose only source is YARN's or MapReduce's defaults (627 of ~1,000: client and
     * service settings of those frameworks, which reading a Parquet file never asks for); anything set in a site file,
     * through {@code spark.hadoop.*} or as a read option stays, with every core default;</li>
     * <li>held as one resource of a new configuration, not as properties set one by one, so that a copy clones one
     * table of ~350 properties, not three (values, values set in code, and each one's sources) of ~1,000;</li>
     * <li>local files read through Hadoop's raw local file system ({@code fs.file.impl}, uncached so that Hadoop
     * builds it rather than hand back the cached checksummed one): pyice_sql's own files have no {@code .crc} side
     * file; one that another engine's Hadoop writer left beside its file is not checked by these reads.</li>
     * </ul>
     */
    public static Configuration forScan(Configuration conf) {
        Set<String> unread = Set.of(YARN_DEFAULTS, MAPREDUCE_DEFAULTS);
        Configuration kept = new Configuration(false);
        for (Map.Entry<String, String> property : conf) {
            if (!onlyFrom(conf, property.getKey(), unread)) {
                kept.set(property.getKey(), property.getValue());
            }
        }
        kept.set("fs.file.impl", RawLocalFileSystem.class.getName());
        kept.setBoolean("fs.file.impl.disable.cache", true);
        Configuration scan = new Configuration(false);
        scan.setClassLoader(conf.getClassLoader());
        scan.addResource(kept);
        return scan;
    }

    private static int withoutDefaults(Configuration conf, Set<String> resources) {
        List<String> defaults = new ArrayList<>();
        for (Map.Entry<String, String> property : conf) {
            if (onlyFrom(conf, property.getKey(), resources)) {
                defaults.add(property.getKey());
            }
        }
        for (String key : defaults) {
            conf.unset(key);
        }
        return defaults.size();
    }

    /** Whether the property {@code key}'s one recorded source is one of {@code resources}. */
    private static boolean onlyFrom(Configuration conf, String key, Set<String> resources) {
        String[] sources = conf.getPropertySources(key);
        return sources != null && sources.length == 1 && resources.contains(sources[0]);
    }

    // Spark 3.5 (Scala 2.12) passes the scan's filters as a scala.collection.Seq, Spark 4 (2.13) as an immutable
    // one: one of these two overrides Spark's method, the other is an overload it never calls.

    public scala.Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> buildReaderWithPartitionValues(
            SparkSession session, StructType dataSchema, StructType partitionSchema, StructType requiredSchema,
            scala.collection.Seq<Filter> filters, scala.collection.immutable.Map<String, String> options,
            Configuration hadoopConf) {
        return super.buildReaderWithPartitionValues(session, dataSchema, partitionSchema, requiredSchema,
                                                    asGiven(filters), options, forScan(hadoopConf));
    }

    public scala.Function1<PartitionedFile, scala.collection.Iterator<InternalRow>> buildReaderWithPartitionValues(
            SparkSession session, StructType dataSchema, StructType partitionSchema, StructType requiredSchema,
            scala.collection.immutable.Seq<Filter> filters, scala.collection.immutable.Map<String, String> options,
            Configuration hadoopConf) {
        return super.buildReaderWithPartitionValues(session, dataSchema, partitionSchema, requiredSchema,
                                                    asGiven(filters), options, forScan(hadoopConf));
    }

    /** The filters as the Spark this was compiled against declares them: Spark called with that very type. */
    @SuppressWarnings("unchecked")
    private static <T> T asGiven(Object filters) {
        return (T) filters;
    }

    @Override
    public String toString() {
        return "Parquet (pyice data files)";
    }
}
