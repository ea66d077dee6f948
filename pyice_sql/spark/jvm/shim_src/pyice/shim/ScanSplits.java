package pyice.shim;

import java.lang.reflect.Method;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;

import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.RuntimeConfig;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;

import scala.Tuple2;
import scala.collection.Iterator;

/**
 * A Parquet read whose splits are sized for the read, not by the session's settings.
 *
 * <p>Spark cuts and packs a file scan's splits when the query that reads it is planned, by the settings of the
 * session the files were read in ({@code spark.sql.files.maxPartitionBytes}, {@code openCostInBytes},
 * {@code minPartitionNum}), with no per-read option. A table's rows handed to the user are planned whenever the
 * user runs them, so the settings cannot be set around that. Iceberg Java sizes each scan's splits itself
 * (adaptive split size: the scan over the cluster's parallelism, at least 16 MB): 9 tasks over nine 34.5 MB
 * files on 2 cores where Spark's settings make 3 uneven ones, and a third less wall time for the scan.
 *
 * <p>So the files are read in a companion session of the user's: the user's settings, kept in step on each read,
 * plus the split sizes; and the read is handed back as a Dataset of the user's session, which analyses, optimizes
 * and runs it. Only the scan node keeps the companion, for its splits and its Parquet settings (the user's).
 * One companion per user session and split sizes, the last few kept.
 *
 * <p>Handing a plan to a session is {@code Dataset.ofRows}, which Spark keeps internal ({@code private[sql]}) but
 * has had since 2.0; it is looked up by reflection, and where it is missing the read answers null and the caller
 * reads with the session's splits.
 */
public final class ScanSplits {
    private static final String MAX_PARTITION_BYTES = "spark.sql.files.maxPartitionBytes";
    private static final String OPEN_COST = "spark.sql.files.openCostInBytes";
    private static final String MIN_PARTITION_NUM = "spark.sql.files.minPartitionNum";
    private static final String LISTING_THRESHOLD = "spark.sql.sources.parallelPartitionDiscovery.threshold";
    private static final int KEPT_PER_SESSION = 4;
    private static final Map<SparkSession, Map<String, SparkSession>> COMPANIONS = new WeakHashMap<>();
    private static volatile Method ofRows;

    private ScanSplits() {}

    /**
     * {@code spark.read.schema(schema).options(options).parquet(paths)} ({@code options}: keys and values in
     * turn), scanned in splits of up to {@code splitBytes}, a file weighing its length and {@code openCostBytes};
     * {@code listOnDriver} lists the paths on the driver however many they are (Spark lists more than its
     * threshold in a Spark job). Null where this Spark cannot hand a plan to a session.
     */
    public static Dataset<Row> parquet(SparkSession spark, long splitBytes, long openCostBytes, boolean listOnDriver,
                                       String schemaJson, List<String> options, List<String> paths) {
        Map<String, String> splits = new HashMap<>();
        splits.put(MAX_PARTITION_BYTES, Long.toString(splitBytes));
        splits.put(MIN_PARTITION_NUM, "1");  // so the split size is the one asked, whatever the bytes read
        splits.put(OPEN_COST, Long.toString(openCostBytes));
        SparkSession companion;
        synchronized (COMPANIONS) {
            companion = COMPANIONS.computeIfAbsent(spark, s -> new LinkedHashMap<String, SparkSession>(8, 0.75f, true) {
                private static final long serialVersionUID = 1L;

                @Override
                protected boolean removeEldestEntry(Map.Entry<String, SparkSession> eldest) {
                    return size() > KEPT_PER_SESSION;
                }
            }).computeIfAbsent(splitBytes + "/" + openCostBytes, k -> spark.newSession());
        }
        RuntimeConfig conf = companion.conf();
        Dataset<Row> read;
        synchronized (companion) {
            if (listOnDriver) {
                splits.put(LISTING_THRESHOLD, Integer.toString(paths.size() + 1));
            }
            sync(spark.conf(), conf, splits);
            try {
                DataFrameReader reader = companion.read().schema((StructType) DataType.fromJson(schemaJson));
                for (int i = 0; i + 1 < options.size(); i += 2) {
                    reader = reader.option(options.get(i), options.get(i + 1));
                }
                read = reader.parquet(paths.toArray(new String[0]));
            } finally {
                if (splits.remove(LISTING_THRESHOLD) != null) {
                    sync(spark.conf(), conf, splits);
                }
            }
        }
        return inSession(spark, read);  // null: see the class comment
    }

    /** The companion's settings made the user's, but for {@code splits}. Those the user's session holds but
     * a session cannot set (static and Spark core settings) are the companion's already: both took them from the
     * Spark context. */
    private static void sync(RuntimeConfig user, RuntimeConfig companion, Map<String, String> splits) {
        Map<String, String> wanted = entries(user);
        wanted.putAll(splits);
        Map<String, String> held = entries(companion);
        for (Map.Entry<String, String> e : wanted.entrySet()) {
            if (!e.getValue().equals(held.get(e.getKey()))) {
                try {
                    companion.set(e.getKey(), e.getValue());
                } catch (Exception notSettable) {  // Spark throws AnalysisException, unchecked in Scala
                    // a static or core setting: see above
                }
            }
        }
        for (String key : held.keySet()) {
            if (!wanted.containsKey(key)) {
                try {
                    companion.unset(key);
                } catch (Exception notSettable) {  // Spark throws AnalysisException, unchecked in Scala
                    // a static or core setting: see above
                }
            }
        }
    }

    private static Map<String, String> entries(RuntimeConfig conf) {
        Map<String, String> out = new HashMap<>();
        Iterator<Tuple2<String, String>> it = conf.getAll().iterator();
        while (it.hasNext()) {
            Tuple2<String, String> e = it.next();
            out.put(e._1(), e._2());
        }
        return out;
    }

    /** {@code read}, a Dataset of another session, as a Dataset of {@code spark}: its analyzed plan in
     * {@code Dataset.ofRows} (the classic Dataset's since Spark 4.0, whose API Dataset has no query execution);
     * null where this Spark has no such method. */
    @SuppressWarnings("unchecked")
    private static Dataset<Row> inSession(SparkSession spark, Dataset<Row> read) {
        Method method = ofRows();
        if (method == null) {
            return null;
        }
        try {
            QueryExecution execution = (QueryExecution) read.getClass().getMethod("queryExecution").invoke(read);
            return (Dataset<Row>) method.invoke(null, spark, execution.analyzed());
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    private static Method ofRows() {
        if (ofRows == null) {
            Class<?> dataset;
            try {
                dataset = Class.forName("org.apache.spark.sql.classic.Dataset");
            } catch (ClassNotFoundException e) {
                dataset = Dataset.class;
            }
            for (Method m : dataset.getMethods()) {
                if (m.getName().equals("ofRows") && m.getParameterCount() == 2
                        && m.getParameterTypes()[1] == LogicalPlan.class) {
                    ofRows = m;
                }
            }
        }
        return ofRows;
    }
}
