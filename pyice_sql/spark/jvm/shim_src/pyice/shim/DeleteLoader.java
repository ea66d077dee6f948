package pyice.shim;

import java.io.EOFException;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.impl.ColumnReadStoreImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.api.Binary;
import org.apache.parquet.schema.MessageType;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;

/**
 * The deleted positions of data files, loaded inside Spark tasks from the delete files the planner paired with
 * each of them: the rows of its position delete files whose {@code file_path} names it (read column by column
 * with parquet-hadoop's column readers, projected to {@code file_path} and {@code pos}; a delete file naming
 * several data files is read once per task) and the positions of its deletion vector (the blob range of the
 * Puffin file, decoded by {@link DeletionVectors#positionsAt}). Paths
 * compare without their {@code file:} prefix, as pyice_sql's Python side compares them
 * ({@code spark_paths.local_key}).
 *
 * <p>The spec (which files have which deletes) rides in the tasks when small, else is a broadcast variable
 * ({@link Shipped}), parsed once per executor JVM. It holds one record per data file with deletes, records separated by
 * U+0000, fields by U+0001: the file's 64-bit key, its path as manifests and delete files spell it, then one field
 * per delete: {@code P<path>} for a position delete file, {@code V<path>} U+0002 offset U+0002 length U+0002
 * cardinality for a deletion vector. A spec whose first record is {@code *} lists every planned data file, those
 * without deletes as a record of their key alone; then a key it lacks is an error, not a file without deletes:
 * a scan keys most rows by {@code _metadata.file_size}, and a row of a file whose size on storage differs from
 * its manifest's {@code file_size_in_bytes} must not read as live.
 */
final class DeleteLoader implements Serializable {
    private static final long serialVersionUID = 1L;
    static final long[] NONE = new long[0];
    /** Separators of the spec string: records, fields, and the numbers of a deletion vector entry. */
    private static final String RECORD = "\u0000";
    private static final String FIELD = "\u0001";
    private static final String NUMBER = "\u0002";

    /** Parsed specs on this JVM by their id ({@link Shipped}), so the tasks of one scan parse its spec once. */
    private static final Map<Long, Map<Long, DataFileDeletes>> PARSED = RecentSpecs.create(8);
    private static final DataFileDeletes NO_DELETES = new DataFileDeletes(null);
    /**
     * Held at key {@link Long#MIN_VALUE} by a parsed spec that lists every planned data file (compared by identity,
     * so a file whose key is that value cannot pass for it).
     */
    private static final DataFileDeletes EVERY_FILE = new DataFileDeletes(null);

    private final Shipped spec;
    // a JDK type, so the block manager resolves it without the shim's class loader
    private final Broadcast<byte[]> conf;
    private transient Map<Long, DataFileDeletes> byKey;
    private transient Configuration hadoopConf;
    private transient Map<String, Map<String, long[]>> positionFiles;

    /** The deletes of one data file: its path (without {@code file:}), position delete files and DV blobs. */
    static final class DataFileDeletes {
        final String dataFile;
        final List<String> positionFiles = new ArrayList<>();
        final List<String> dvFiles = new ArrayList<>();
        final List<long[]> dvRanges = new ArrayList<>();  // {offset, length, cardinality}

        DataFileDeletes(String dataFile) {
            this.dataFile = dataFile;
        }
    }

    private DeleteLoader(Shipped spec, Broadcast<byte[]> conf) {
        this.spec = spec;
        this.conf = conf;
    }

    /** Ships {@code spec} and {@code conf}; parses the spec now (so a bad one fails on the driver). */
    static DeleteLoader ship(SparkSession spark, String spec, Configuration conf) throws IOException {
        JavaSparkContext jsc = JavaSparkContext.fromSparkContext(spark.sparkContext());
        Shipped shipped = Shipped.of(jsc, spec);
        PARSED.put(shipped.id(), parse(spec));  // tasks on the driver's JVM reuse it
        return new DeleteLoader(shipped, FooterStats.ship(jsc, conf));
    }

    private static Map<Long, DataFileDeletes> parse(String spec) {
        Map<Long, DataFileDeletes> byKey = new HashMap<>();
        for (String record : spec.split(RECORD, -1)) {
            if (record.isEmpty()) {
                continue;  // a spec of no records
            }
            if (record.equals("*")) {
                byKey.put(Long.MIN_VALUE, EVERY_FILE);
                continue;
            }
            String[] fields = record.split(FIELD, -1);
            if (fields.length == 1) {
                byKey.put(Long.parseLong(fields[0]), NO_DELETES);
                continue;
            }
            DataFileDeletes file = new DataFileDeletes(localKey(fields[1]));
            for (int i = 2; i < fields.length; i++) {
                String f = fields[i];
                if (f.startsWith("P")) {
                    file.positionFiles.add(f.substring(1));
                } else {
                    String[] dv = f.substring(1).split(NUMBER, -1);
                    file.dvFiles.add(dv[0]);
                    file.dvRanges.add(new long[] {Long.parseLong(dv[1]), Long.parseLong(dv[2]), Long.parseLong(dv[3])});
                }
            }
            byKey.put(Long.parseLong(fields[0]), file);
        }
        return byKey;
    }

    /**
     * The sorted deleted positions of the data file with this key, each once (a position deleted by a DV and by
     * a position delete file counts once); none for a file without deletes.
     */
    long[] positions(long key) throws IOException {
        if (byKey == null) {
            byKey = PARSED.computeIfAbsent(spec.id(), id -> parse(spec.value()));
        }
        DataFileDeletes d = byKey.get(key);
        if (d == null && byKey.get(Long.MIN_VALUE) == EVERY_FILE) {
            throw new IllegalStateException("a scanned row's data file key " + key + " (its file_size_in_bytes, or "
                + "its path's hash) is no planned data file's: a manifest disagrees with the file on storage");
        }
        if (d == null || d == NO_DELETES || d == EVERY_FILE) {
            return NONE;
        }
        List<long[]> parts = new ArrayList<>();
        for (String file : d.positionFiles) {
            long[] p = positionFile(file).get(d.dataFile);
            if (p != null) {
                parts.add(p);
            }
        }
        for (int i = 0; i < d.dvFiles.size(); i++) {
            parts.add(readDeletionVector(d.dvFiles.get(i), d.dvRanges.get(i)));
        }
        int n = 0;
        for (long[] p : parts) {
            n += p.length;
        }
        long[] all = new long[n];
        n = 0;
        for (long[] p : parts) {
            System.arraycopy(p, 0, all, n, p.length);
            n += p.length;
        }
        Arrays.sort(all);
        int distinct = 0;
        for (int i = 0; i < all.length; i++) {
            if (i == 0 || all[i] != all[i - 1]) {
                all[distinct++] = all[i];
            }
        }
        return distinct == all.length ? all : Arrays.copyOf(all, distinct);
    }

    /**
     * A position delete file's rows grouped by data file (path without {@code file:}), read once per task when
     * it names several data files.
     */
    private Map<String, long[]> positionFile(String file) throws IOException {
        if (positionFiles == null) {
            positionFiles = new HashMap<>();
        }
        Map<String, long[]> rows = positionFiles.get(file);
        if (rows != null) {
            return rows;
        }
        Map<String, LongList> grouped = new HashMap<>();
        try (ParquetFileReader reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(file), hadoopConf()))) {
            MessageType schema = reader.getFooter().getFileMetaData().getSchema();
            MessageType projection = new MessageType(schema.getName(), schema.getType("file_path"), schema.getType("pos"));
            reader.setRequestedSchema(projection);
            ColumnDescriptor pathColumn = projection.getColumnDescription(new String[] {"file_path"});
            ColumnDescriptor posColumn = projection.getColumnDescription(new String[] {"pos"});
            String createdBy = reader.getFooter().getFileMetaData().getCreatedBy();
            Binary lastPath = null;
            LongList positions = null;
            for (PageReadStore rowGroup = reader.readNextRowGroup(); rowGroup != null; rowGroup = reader.readNextRowGroup()) {
                ColumnReadStoreImpl columns = new ColumnReadStoreImpl(
                    rowGroup, new GroupRecordConverter(projection).getRootConverter(), projection, createdBy);
                ColumnReader paths = columns.getColumnReader(pathColumn);
                ColumnReader pos = columns.getColumnReader(posColumn);
                for (long i = 0, n = rowGroup.getRowCount(); i < n; i++) {
                    boolean present = paths.getCurrentDefinitionLevel() == pathColumn.getMaxDefinitionLevel()
                        && pos.getCurrentDefinitionLevel() == posColumn.getMaxDefinitionLevel();
                    if (present) {
                        // a dictionary-encoded column hands back the same Binary for the same path
                        Binary path = paths.getBinary();
                        if (path != lastPath) {
                            lastPath = path;
                            positions = grouped.computeIfAbsent(localKey(path.toStringUsingUTF8()), k -> new LongList());
                        }
                        positions.add(pos.getLong());
                    }
                    paths.consume();
                    pos.consume();
                }
            }
        } catch (IOException | RuntimeException e) {
            throw new IOException("cannot read position delete file " + file + ": " + e, e);
        }
        rows = new HashMap<>();
        for (Map.Entry<String, LongList> e : grouped.entrySet()) {
            rows.put(e.getKey(), e.getValue().toArray());
        }
        if (rows.size() > 1) {  // kept for the task's other data files; a file-scoped one serves its file once
            positionFiles.put(file, rows);
        }
        return rows;
    }

    private long[] readDeletionVector(String puffin, long[] range) throws IOException {
        byte[] blob = new byte[Math.toIntExact(range[1])];
        Path path = new Path(puffin);
        FileSystem fs = path.getFileSystem(hadoopConf());
        try (FSDataInputStream in = fs.open(path)) {
            in.readFully(range[0], blob);
        } catch (EOFException e) {
            throw new DeletionVectors.DeletionVectorError("deletion vector at offset " + range[0] + " length "
                + range[1] + " runs past the end of the file", puffin);
        }
        return DeletionVectors.positionsAt(blob, 0, range[1], range[2], puffin);
    }

    private Configuration hadoopConf() throws IOException {
        if (hadoopConf == null) {
            hadoopConf = FooterStats.fromBroadcast(conf);
        }
        return hadoopConf;
    }

    /** The path without its {@code file:} prefix: one key for {@code /x}, {@code file:/x} and {@code file:///x}. */
    static String localKey(String path) {
        if (!path.startsWith("file:/")) {
            return path;
        }
        int i = 5;
        while (i < path.length() && path.charAt(i) == '/') {
            i++;
        }
        return "/" + path.substring(i);
    }
}
