package pyice.shim;

import java.util.Map;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The NaN values of a data file's float and double columns, counted as its rows are written: Parquet's statistics
 * have no NaN count, and Iceberg's metrics do (per file, as Iceberg Java's writers count them). The columns are
 * {@link #FIELDS}' {@code path=id} entries, each path the column's names through structs, encoded and joined as in
 * {@link DataFileWriteSupport#IDS} ({@code point/x=7}), found by name in the row schema Spark writes. The counts go
 * into the file's footer key-value metadata under {@link #KEY}, as {@code id=count} entries separated by commas,
 * where pyice's footer read ({@link FooterStats}) finds them.
 */
final class NanCounts {
    static final String FIELDS = "pyice.parquet.nan-fields";
    static final String KEY = "pyice.nan-counts";

    private final int[] ids;
    private final int[][] ordinals;   // per column: the ordinal in each struct on its path, the leaf's last
    private final int[][] widths;     // per column: the field count of each struct on its path
    private final boolean[] doubles;  // per column: double, else float
    private final long[] counts;

    NanCounts(StructType rows, Map<String, Integer> fields) {
        int n = fields.size();
        ids = new int[n];
        ordinals = new int[n][];
        widths = new int[n][];
        doubles = new boolean[n];
        counts = new long[n];
        int c = 0;
        for (Map.Entry<String, Integer> field : fields.entrySet()) {
            String[] names = field.getKey().split("/");
            ordinals[c] = new int[names.length];
            widths[c] = new int[names.length];
            DataType type = rows;
            for (int i = 0; i < names.length; i++) {
                if (!(type instanceof StructType)) {
                    throw unknown(field.getKey(), rows);
                }
                StructField[] structFields = ((StructType) type).fields();
                ordinals[c][i] = ordinal(structFields, names[i]);
                if (ordinals[c][i] < 0) {
                    throw unknown(field.getKey(), rows);
                }
                widths[c][i] = structFields.length;
                type = structFields[ordinals[c][i]].dataType();
            }
            if (!DataTypes.DoubleType.equals(type) && !DataTypes.FloatType.equals(type)) {
                throw new IllegalStateException("the column " + field.getKey() + " (" + FIELDS + ") is "
                                                + type.simpleString() + ", not float or double");
            }
            doubles[c] = DataTypes.DoubleType.equals(type);
            ids[c] = field.getValue();
            c++;
        }
    }

    private static int ordinal(StructField[] fields, String encodedName) {
        for (int i = 0; i < fields.length; i++) {
            if (DataFileWriteSupport.encode(fields[i].name()).equals(encodedName)) {
                return i;
            }
        }
        return -1;
    }

    private static IllegalStateException unknown(String path, StructType rows) {
        return new IllegalStateException("no column " + path + " (" + FIELDS + ") in the rows written: "
                                         + rows.simpleString());
    }

    /** Counts the NaN values of {@code row}, one of the file's rows. */
    void add(InternalRow row) {
        for (int c = 0; c < ids.length; c++) {
            int[] path = ordinals[c];
            int leaf = path.length - 1;
            InternalRow struct = row;
            for (int i = 0; i < leaf && struct != null; i++) {
                struct = struct.isNullAt(path[i]) ? null : struct.getStruct(path[i], widths[c][i]);
            }
            if (struct != null && !struct.isNullAt(path[leaf])
                && (doubles[c] ? Double.isNaN(struct.getDouble(path[leaf])) : Float.isNaN(struct.getFloat(path[leaf])))) {
                counts[c]++;
            }
        }
    }

    /** The counts as the footer keeps them under {@link #KEY}. */
    String metadata() {
        StringBuilder sb = new StringBuilder(16 * ids.length);
        for (int c = 0; c < ids.length; c++) {
            sb.append(c > 0 ? "," : "").append(ids[c]).append('=').append(counts[c]);
        }
        return sb.toString();
    }
}
