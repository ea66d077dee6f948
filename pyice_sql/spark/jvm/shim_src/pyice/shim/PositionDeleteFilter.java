package pyice.shim;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.api.java.UDF2;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * Position deletes and deletion vectors applied inside the scan tasks, the way Iceberg Java applies them: each
 * task loads the deleted positions of the data file it reads ({@link DeleteLoader}) and tests every row against
 * them, so a merge-on-read scan needs no job to read the delete rows, no hash table built on the driver and
 * broadcast, and no join probed with a long path string per row.
 *
 * <p>The filter is a Spark SQL function over {@code (key, _metadata.row_index)}, true for a live row (called through
 * {@link ShimFunctions} with primitive arguments, or as a UDF where that catalog cannot load), where the key names
 * the row's data file as a long: {@code _metadata.file_size} where no other scanned file has that size (a long
 * Spark already holds per file), else {@code xxhash64(_metadata.file_path)}, for which {@link #fileKeys} computes
 * the key of every planned file on the driver (with Spark's own {@code xxhash64}, over a local relation: no job)
 * and returns null when two of the scan's files share one, so the caller keeps its exact join instead. A scan reads a
 * file's rows in ascending position, so the UDF walks the file's sorted deleted positions with a cursor and
 * searches only past a deleted position or when positions go back (a binary search on every row made a 10M-row
 * scan of the benchmark table after its statements ~13 % slower).
 *
 * <p>{@link #deletedPositions} gives the same positions as an array, for the writers that fold a data file's
 * previous deletes into its new delete file or deletion vector: they ask once per data file the statement
 * changed, in the write tasks, so the previous deletes of untouched files are never read.
 */
public final class PositionDeleteFilter extends RowPredicate {
    private static final long serialVersionUID = 1L;
    private static final String RECORD = "\u0000";

    private final DeleteLoader deletes;
    private transient long currentKey;
    private transient long[] current;
    private transient int cursor;  // deleted positions of the current file below the last position asked

    private PositionDeleteFilter(DeleteLoader deletes) {
        super("live_rows", "live_rows(file key, row position): false for a row a position delete or deletion vector "
              + "removes", DataTypes.LongType, DataTypes.LongType);
        this.deletes = deletes;
    }

    /**
     * The live-row predicate over the scan's file {@code key} and {@code pos} ({@code _metadata.row_index})
     * columns; {@code spec} as {@link DeleteLoader} reads it, keyed by the same keys. The caller must have checked
     * that the scan's keys are distinct.
     */
    public static Column liveRows(SparkSession spark, String spec, Configuration conf, Column key, Column pos)
            throws IOException {
        PositionDeleteFilter filter = new PositionDeleteFilter(DeleteLoader.ship(spark, spec, conf));
        String name = ShimFunctions.register(spark, filter);
        return name != null ? functions.call_function(name, key, pos)
            : functions.udf(new AsUdf(filter), DataTypes.BooleanType).apply(key, pos);
    }

    /**
     * The sorted deleted positions (array of bigint, each once) of the data file whose {@code path} column is
     * given; {@code spec} keyed by {@link #fileKeys} of the same spelling of the paths, checked distinct.
     */
    public static Column deletedPositions(SparkSession spark, String spec, Configuration conf, Column path)
            throws IOException {
        Positions positions = new Positions(DeleteLoader.ship(spark, spec, conf));
        return functions.udf(positions, DataTypes.createArrayType(DataTypes.LongType, false))
            .apply(functions.xxhash64(path));
    }

    /**
     * Spark's {@code xxhash64} of each of {@code spellings} (paths separated by U+0000), computed here
     * ({@link XxHash64}), as decimal numbers separated by commas; null when two share a key.
     */
    public static String fileKeys(String spellings) {
        StringBuilder out = new StringBuilder();
        Set<Long> seen = new HashSet<>();
        for (String p : spellings.split(RECORD, -1)) {
            long key = XxHash64.of(p);
            if (!seen.add(key)) {
                return null;
            }
            out.append(out.length() == 0 ? "" : ",").append(key);
        }
        return out.toString();
    }

    /** The row's liveness, called by Spark's generated code with primitive arguments. */
    public boolean invoke(long key, long pos) {
        if (current == null || key != currentKey) {
            try {
                current = deletes.positions(key);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            currentKey = key;
            cursor = 0;
        }
        long[] deleted = current;
        if (deleted.length == 0) {
            return true;
        }
        long p = pos;
        int i = cursor;
        if (i > 0 && deleted[i - 1] >= p) {  // not ascending: search again from the start
            i = 0;
        }
        if (i < deleted.length && deleted[i] < p) {  // the usual step: just past one deleted position
            i++;
        }
        if (i < deleted.length && deleted[i] < p) {
            int found = Arrays.binarySearch(deleted, i, deleted.length, p);
            i = found >= 0 ? found : -found - 1;
        }
        cursor = i;
        return i == deleted.length || deleted[i] != p;
    }

    /** The filter as a UDF, where {@link ShimFunctions} cannot be loaded by Spark. */
    private static final class AsUdf implements UDF2<Long, Long, Boolean> {
        private static final long serialVersionUID = 1L;
        private final PositionDeleteFilter filter;

        AsUdf(PositionDeleteFilter filter) {
            this.filter = filter;
        }

        @Override
        public Boolean call(Long key, Long pos) {
            return filter.invoke(key, pos);
        }
    }

    /** The UDF of {@link #deletedPositions}. */
    private static final class Positions implements UDF1<Long, long[]> {
        private static final long serialVersionUID = 1L;
        private final DeleteLoader deletes;

        Positions(DeleteLoader deletes) {
            this.deletes = deletes;
        }

        @Override
        public long[] call(Long key) throws IOException {
            return deletes.positions(key);
        }
    }
}
