package pyice.shim;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.statistics.Statistics;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ColumnPath;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.schema.LogicalTypeAnnotation;
import org.apache.parquet.schema.PrimitiveType;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.broadcast.Broadcast;

/**
 * Reads Parquet footers on the executors and summarises each file as one JSON object:
 *
 * <pre>
 * {"path": str, "length": bytes, "rowCount": n, "rowGroups": n, "splitOffsets": [sorted row-group starts],
 *  "nanCounts": "id=count,..."|null (what pyice's writer kept in the footer: {@link NanCounts}),
 *  "columns": [{"path": [names], "fieldId": int|null, "physicalType": "INT64", "logicalType": str|null,
 *               "typeLength": n, "maxRepetitionLevel": n, "maxDefinitionLevel": n,
 *               "compressedSize": n, "valueCount": n, "nullCount": n|null, "min": hex|null, "max": hex|null}]}
 * </pre>
 *
 * Per column, sizes and counts are summed over row groups. min/max are Parquet's raw statistics bytes
 * ({@code Statistics.getMinBytes()}) after merging the chunks' statistics with the column's comparator.
 * nullCount is null if any chunk has no statistics or no null count. min/max are null if any chunk has no
 * statistics, or has non-null values but no min/max (e.g. dropped because too large, NaN, or INT96); chunks
 * holding only nulls are skipped. No NaN handling is done here: Python drops NaN and fixes signed zeros.
 */
public final class FooterStats {
    private FooterStats() {}

    /**
     * Summarises {@code paths} (Hadoop URIs) in one Spark job; returns a JSON array with one object per path,
     * in input order. {@code conf} may be null, meaning the context's Hadoop configuration.
     */
    public static String footerStats(JavaSparkContext jsc, List<String> paths, Configuration conf) throws IOException {
        if (paths.isEmpty()) {
            return "[]";
        }
        Configuration c = conf != null ? conf : jsc.hadoopConfiguration();
        Broadcast<byte[]> confBytes = ship(jsc, c);
        int slices = Math.max(1, Math.min(paths.size(), 2 * jsc.defaultParallelism()));
        String previous = jsc.getLocalProperty("spark.job.description");
        jsc.setJobDescription("pyice_sql: read " + paths.size() + " Parquet footer(s)");
        try {
            List<String> out = jsc.parallelize(new ArrayList<>(paths), slices).mapPartitions(new ReadFooters(confBytes))
                .collect();
            return "[" + String.join(",", out) + "]";
        } finally {
            jsc.setLocalProperty("spark.job.description", previous);
        }
    }

    /**
     * Summarises {@code paths} on the driver, {@code threads} at a time, as a JSON array in input order: for a
     * few files, or files on a local disk, where a Spark job costs more than the reads.
     */
    public static String footerStatsOnDriver(List<String> paths, Configuration conf, int threads)
            throws IOException {
        if (paths.size() <= 1) {
            return paths.isEmpty() ? "[]" : "[" + named(paths.get(0), conf) + "]";
        }
        ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(threads, paths.size())), r -> {
            Thread t = new Thread(r, "pyice-footers");
            t.setDaemon(true);
            return t;
        });
        try {
            List<Future<String>> reads = new ArrayList<>();
            for (String path : paths) {
                reads.add(pool.submit(() -> named(path, conf)));
            }
            List<String> out = new ArrayList<>();
            for (Future<String> read : reads) {
                out.add(read.get());
            }
            return "[" + String.join(",", out) + "]";
        } catch (ExecutionException e) {
            throw e.getCause() instanceof IOException ? (IOException) e.getCause() : new IOException(e.getCause());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while reading Parquet footers", e);
        } finally {
            pool.shutdownNow();
        }
    }

    /** {@link #footerJson}, its failure naming the file. */
    private static String named(String path, Configuration conf) throws IOException {
        try {
            return footerJson(path, conf);
        } catch (IOException | RuntimeException e) {
            throw new IOException("cannot read the Parquet footer of " + path + ": " + e, e);
        }
    }

    /** Summarises one file on the calling JVM (the per-file work of {@link #footerStats}). */
    public static String footerJson(String path, Configuration conf) throws IOException {
        HadoopInputFile file = HadoopInputFile.fromPath(new Path(path), conf);
        ParquetMetadata footer;
        try (ParquetFileReader reader = ParquetFileReader.open(file)) {
            footer = reader.getFooter();
        }
        return summary(path, file.getLength(), footer);
    }

    /** The summary of a Parquet file of {@code length} bytes whose footer is {@code footer}. */
    static String summary(String path, long length, ParquetMetadata footer) {
        Map<ColumnPath, Column> columns = new LinkedHashMap<>();
        for (ColumnDescriptor d : footer.getFileMetaData().getSchema().getColumns()) {
            columns.put(ColumnPath.get(d.getPath()), new Column(d));
        }
        long rows = 0;
        List<Long> splits = new ArrayList<>();
        for (BlockMetaData block : footer.getBlocks()) {
            rows += block.getRowCount();
            long start = Long.MAX_VALUE;
            for (ColumnChunkMetaData chunk : block.getColumns()) {
                long dict = chunk.getDictionaryPageOffset();
                long data = chunk.getFirstDataPageOffset();
                start = Math.min(start, dict > 0 && dict < data ? dict : data);
                Column col = columns.get(chunk.getPath());
                if (col != null) {
                    col.add(chunk);
                }
            }
            if (start != Long.MAX_VALUE) {
                splits.add(start);
            }
        }
        splits.sort(null);

        StringBuilder sb = new StringBuilder(256 + 256 * columns.size()).append('{');
        Json.key(sb, "path");
        Json.str(sb, path).append(',');
        Json.key(sb, "length").append(length).append(',');
        Json.key(sb, "rowCount").append(rows).append(',');
        Json.key(sb, "rowGroups").append(footer.getBlocks().size()).append(',');
        Json.key(sb, "splitOffsets").append('[');
        for (int i = 0; i < splits.size(); i++) {
            sb.append(i > 0 ? "," : "").append(splits.get(i));
        }
        sb.append("],");
        String nans = footer.getFileMetaData().getKeyValueMetaData().get(NanCounts.KEY);
        Json.key(sb, "nanCounts");
        (nans == null ? sb.append("null") : Json.str(sb, nans)).append(',');
        Json.key(sb, "columns").append('[');
        boolean first = true;
        for (Column col : columns.values()) {
            sb.append(first ? "" : ",");
            first = false;
            col.toJson(sb);
        }
        return sb.append("]}").toString();
    }

    /** Per-leaf accumulator over row groups. */
    private static final class Column {
        final ColumnDescriptor desc;
        long compressed;
        long values;
        long nulls;
        boolean nullsUnknown;
        boolean boundsUnknown;
        Statistics<?> merged;

        Column(ColumnDescriptor desc) {
            this.desc = desc;
        }

        void add(ColumnChunkMetaData chunk) {
            compressed += chunk.getTotalSize();
            values += chunk.getValueCount();
            Statistics<?> s = chunk.getStatistics();
            if (s == null || s.isEmpty()) {
                nullsUnknown = true;
                boundsUnknown = true;
                return;
            }
            if (s.isNumNullsSet()) {
                nulls += s.getNumNulls();
            } else {
                nullsUnknown = true;
            }
            if (s.hasNonNullValue()) {
                if (merged == null) {
                    merged = s.copy();
                } else {
                    merged.mergeStatistics(s); // compares with the column's comparator
                }
            } else if (!s.isNumNullsSet() || s.getNumNulls() < chunk.getValueCount()) {
                boundsUnknown = true; // non-null values exist but min/max were not kept
            }
        }

        void toJson(StringBuilder sb) {
            PrimitiveType type = desc.getPrimitiveType();
            sb.append('{');
            Json.key(sb, "path").append('[');
            String[] path = desc.getPath();
            for (int i = 0; i < path.length; i++) {
                Json.str(sb.append(i > 0 ? "," : ""), path[i]);
            }
            sb.append("],");
            Json.key(sb, "fieldId").append(type.getId() == null ? "null" : String.valueOf(type.getId().intValue()))
                .append(',');
            Json.key(sb, "physicalType");
            Json.str(sb, type.getPrimitiveTypeName().name()).append(',');
            LogicalTypeAnnotation logical = type.getLogicalTypeAnnotation();
            Json.key(sb, "logicalType");
            Json.str(sb, logical == null ? null : logical.toString()).append(',');
            Json.key(sb, "typeLength").append(type.getTypeLength()).append(',');
            Json.key(sb, "maxRepetitionLevel").append(desc.getMaxRepetitionLevel()).append(',');
            Json.key(sb, "maxDefinitionLevel").append(desc.getMaxDefinitionLevel()).append(',');
            Json.key(sb, "compressedSize").append(compressed).append(',');
            Json.key(sb, "valueCount").append(values).append(',');
            Json.key(sb, "nullCount").append(nullsUnknown ? "null" : String.valueOf(nulls)).append(',');
            boolean bounds = !boundsUnknown && merged != null && merged.hasNonNullValue();
            Json.key(sb, "min");
            Json.str(sb, bounds ? Json.hex(merged.getMinBytes()) : null).append(',');
            Json.key(sb, "max");
            Json.str(sb, bounds ? Json.hex(merged.getMaxBytes()) : null).append('}');
        }
    }

    /** The executor side: rebuilds the Hadoop configuration once per partition, then reads each footer. */
    private static final class ReadFooters implements FlatMapFunction<Iterator<String>, String> {
        private static final long serialVersionUID = 1L;
        private final Broadcast<byte[]> confBytes;

        ReadFooters(Broadcast<byte[]> confBytes) {
            this.confBytes = confBytes;
        }

        @Override
        public Iterator<String> call(Iterator<String> paths) throws IOException {
            Configuration conf = fromBroadcast(confBytes);
            List<String> out = new ArrayList<>();
            while (paths.hasNext()) {
                out.add(named(paths.next(), conf));
            }
            return out.iterator();
        }
    }

    private static byte[] toBytes(Configuration conf) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(buf)) {
            conf.write(out);
        }
        return buf.toByteArray();
    }

    /** The last configuration shipped: its properties, and the broadcast of its bytes (see {@link #ship}). */
    private static Map<String, String> shippedProperties;
    private static Broadcast<byte[]> shippedBytes;
    private static SparkContext shippedBy;

    /**
     * A broadcast of {@code conf} as bytes (a JDK type, so no shim class needs resolving in the block manager),
     * shared by every job that ships the same properties: serializing ~100 KB of properties and broadcasting them
     * cost 25-50 ms per job on the driver, and each task then read them again. A changed property (or a new
     * SparkContext) ships anew; comparing the properties is ~1 ms.
     */
    static synchronized Broadcast<byte[]> ship(JavaSparkContext jsc, Configuration conf) throws IOException {
        Map<String, String> properties = new HashMap<>();
        for (Map.Entry<String, String> e : conf) {
            properties.put(e.getKey(), e.getValue());
        }
        if (shippedBytes == null || shippedBy != jsc.sc() || !properties.equals(shippedProperties)) {
            shippedBytes = jsc.broadcast(toBytes(conf));
            shippedProperties = properties;
            shippedBy = jsc.sc();
        }
        return shippedBytes;
    }

    /** Configurations read from a broadcast, by its id: every task of a job on this JVM reads the same one. */
    private static final Map<Long, Configuration> SHIPPED = RecentSpecs.create(8);

    /**
     * The Hadoop configuration a broadcast of {@link #ship} ships, read once per JVM (~100 KB of properties:
     * 10-40 ms each time). Tasks only read it, as Spark's own file tasks share their broadcast configuration.
     */
    static Configuration fromBroadcast(Broadcast<byte[]> shipped) throws IOException {
        Configuration conf = SHIPPED.get(shipped.id());
        if (conf == null) {
            conf = fromBytes(shipped.value());
            SHIPPED.put(shipped.id(), conf);
        }
        return conf;
    }

    private static Configuration fromBytes(byte[] bytes) throws IOException {
        Configuration conf = new Configuration(false);
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            conf.readFields(in);
        }
        return conf;
    }
}
