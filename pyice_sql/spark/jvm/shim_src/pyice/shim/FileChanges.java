package pyice.shim;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Collections;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;
import org.roaringbitmap.longlong.Roaring64Bitmap;

/**
 * What a copy-on-write statement changes in each data file, counted by the tasks that tag its rows: the
 * positions updated and deleted (each once), the rows inserted, and whether some position is in more than one
 * matched pair (the MERGE cardinality check). A Spark aggregate by (file, position) and then by file costs a
 * shuffle, hence one more job and stage wait per statement (~60-100 ms of a 1 % MERGE into a 2M-row table);
 * here each task keeps its positions in bitmaps ({@code RoaringBitmap}, which Spark itself ships) and the driver
 * merges them, so the answer is exact however the join spread a position's pairs over tasks.
 *
 * <p>Rows are {@code (ordinal, pos, updates, deletes, inserts, matched)}: the row's data file ordinal and
 * position (null for an inserted row), whether its action updates, deletes or inserts, and whether it is a matched
 * pair. {@link #perFile} returns a JSON array of {@code [ordinal, updated, deleted, inserted, pairs]}, the
 * ordinal null for inserted rows and {@code pairs} 0, 1 or 2 (two or more pairs on one position).
 *
 * <p>A seventh column, when there is one, is the row's source row id (a MERGE's source rows numbered by dml.py):
 * the ids of the matched pairs' source rows are kept in one more bitmap, so that {@link UnmatchedSources} tells
 * the source rows no target row matched without a second join (copy_on_write.py).
 */
public final class FileChanges implements MapPartitionsFunction<Row, byte[]> {
    private static final long serialVersionUID = 1L;
    private static final long NO_FILE = -1L;

    /** One data file's changes in one task, or merged. */
    private static final class Counts {
        final Roaring64Bitmap updated = new Roaring64Bitmap();
        final Roaring64Bitmap deleted = new Roaring64Bitmap();
        final Roaring64Bitmap paired = new Roaring64Bitmap();  // positions in a matched pair
        final Roaring64Bitmap twice = new Roaring64Bitmap();  // positions in two or more
        long inserted;

        void merge(Counts other) {
            Roaring64Bitmap both = paired.clone();
            both.and(other.paired);
            twice.or(both);
            twice.or(other.twice);
            paired.or(other.paired);
            updated.or(other.updated);
            deleted.or(other.deleted);
            inserted += other.inserted;
        }

        void write(DataOutputStream out) throws IOException {
            out.writeLong(inserted);
            for (Roaring64Bitmap b : new Roaring64Bitmap[] {updated, deleted, paired, twice}) {
                b.runOptimize();
                b.serialize(out);
            }
        }

        static Counts read(DataInputStream in) throws IOException {
            Counts c = new Counts();
            c.inserted = in.readLong();
            for (Roaring64Bitmap b : new Roaring64Bitmap[] {c.updated, c.deleted, c.paired, c.twice}) {
                b.deserialize(in);
            }
            return c;
        }
    }

    private FileChanges() {}

    /** The changes per data file of {@code rows} (see the class comment), one Spark job. */
    public static String perFile(Dataset<Row> rows) throws IOException {
        return perFileOf(count(rows));
    }

    /** A JSON array of {@code [ordinal, updated, deleted, inserted, pairs]} (see the class comment). */
    public static String perFileOf(Changes changes) {
        return changes.perFile();
    }

    /**
     * The name under which SQL text calls {@link Changes#unmatchedSources} (one bigint: a source row id); null when
     * Spark cannot load {@link ShimFunctions}, where {@link #unmatchedSourcesColumn} gives the test as a column.
     */
    public static String unmatchedSourcesFunction(SparkSession spark, Changes changes) throws IOException {
        return ShimFunctions.register(spark, changes.unmatchedSources());
    }

    /** {@link Changes#unmatchedSources} as a UDF over the column {@code sourceRow}. */
    public static Column unmatchedSourcesColumn(Changes changes, Column sourceRow) throws IOException {
        return functions.udf(changes.unmatchedSources().asUdf(), DataTypes.BooleanType).apply(sourceRow);
    }

    /**
     * The encoder of the tasks' answers, built once on the driver ({@code Encoders.BINARY()} builds a new one by
     * Scala reflection on each call, ~1 ms); a holder, so that the executors that load this class never build it.
     */
    private static final class Parts {
        static final Encoder<byte[]> ENCODER = Encoders.BINARY();
    }

    /** The changes of {@code rows} (see the class comment), one Spark job, kept for the questions below. */
    public static Changes count(Dataset<Row> rows) throws IOException {
        List<byte[]> parts = rows.mapPartitions(new FileChanges(), Parts.ENCODER).collectAsList();
        Changes changes = new Changes();
        for (byte[] part : parts) {
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(part));
            for (int n = in.readInt(); n > 0; n--) {
                long ordinal = in.readLong();
                Counts c = Counts.read(in);
                Counts seen = changes.files.putIfAbsent(ordinal, c);
                if (seen != null) {
                    seen.merge(c);
                }
            }
            Roaring64Bitmap sources = new Roaring64Bitmap();
            sources.deserialize(in);
            changes.matchedSources.or(sources);
        }
        return changes;
    }

    /** What {@link #count} found, merged on the driver. */
    public static final class Changes {
        private final Map<Long, Counts> files = new TreeMap<>();
        private final Roaring64Bitmap matchedSources = new Roaring64Bitmap();

        String perFile() {
            StringBuilder sb = new StringBuilder("[");
            for (Map.Entry<Long, Counts> e : files.entrySet()) {
                Counts c = e.getValue();
                int pairs = !c.twice.isEmpty() ? 2 : c.paired.isEmpty() ? 0 : 1;
                sb.append(sb.length() > 1 ? "," : "").append('[')
                  .append(e.getKey() == NO_FILE ? "null" : String.valueOf(e.getKey())).append(',')
                  .append(c.updated.getLongCardinality()).append(',').append(c.deleted.getLongCardinality())
                  .append(',').append(c.inserted).append(',').append(pairs).append(']');
            }
            return sb.append(']').toString();
        }

        /**
         * True for a source row id no matched pair had. The ids are shipped with the tasks as one bitmap (the
         * executor's ids run in ranges per source partition: a few bytes per range).
         */
        UnmatchedSources unmatchedSources() throws IOException {
            matchedSources.runOptimize();
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(bytes);
            matchedSources.serialize(out);
            out.flush();
            return new UnmatchedSources(bytes.toByteArray());
        }
    }

    @Override
    public Iterator<byte[]> call(Iterator<Row> rows) throws IOException {
        Map<Long, Counts> files = new HashMap<>();
        Roaring64Bitmap sources = new Roaring64Bitmap();
        while (rows.hasNext()) {
            Row r = rows.next();
            if (r.length() > 6 && r.getBoolean(5) && !r.isNullAt(6)) {
                sources.addLong(r.getLong(6));
            }
            long ordinal = r.isNullAt(0) ? NO_FILE : r.getLong(0);
            Counts c = files.computeIfAbsent(ordinal, k -> new Counts());
            if (r.getBoolean(4)) {
                c.inserted++;
            }
            if (r.isNullAt(1)) {
                continue;
            }
            long pos = r.getLong(1);
            if (r.getBoolean(2)) {
                c.updated.addLong(pos);
            }
            if (r.getBoolean(3)) {
                c.deleted.addLong(pos);
            }
            if (r.getBoolean(5)) {
                if (c.paired.contains(pos)) {
                    c.twice.addLong(pos);
                } else {
                    c.paired.addLong(pos);
                }
            }
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        DataOutputStream out = new DataOutputStream(bytes);
        out.writeInt(files.size());
        for (Map.Entry<Long, Counts> e : files.entrySet()) {
            out.writeLong(e.getKey());
            e.getValue().write(out);
        }
        sources.runOptimize();
        sources.serialize(out);
        out.flush();
        return Collections.singletonList(bytes.toByteArray()).iterator();
    }
}
