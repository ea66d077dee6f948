package pyice.shim;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;

/**
 * The facts of a scanned row's data file (its manifest path, spec id, partition key, data sequence number, first
 * row id...) looked up by the file's 64-bit key ({@code xxhash64} of Spark's spelling of its path, see
 * {@link PositionDeleteFilter#fileKeys}) in a table shipped with the tasks ({@link Shipped}).
 *
 * <p>A broadcast hash join of the same table would do, but its broadcast is a Spark job the scan waits for
 * (then a re-plan by adaptive execution), on every row-level statement. Here each fact is its own UDF column,
 * so Spark prunes the facts a plan never reads, and a statement's filter is pushed below them: an UPDATE or
 * DELETE looks up the facts of its matching rows only.
 *
 * <p>The same lookup by a file's ordinal in the scan gives back the path of rows that carried the ordinal
 * through a join in place of the path; a null key (a row of no data file) gives null.
 *
 * <p>The table is a string of records separated by U+0000, fields by U+0001: the key, then one field per fact in
 * the order of {@code types} (an empty field is null). It is parsed once per JVM.
 */
public final class FileFacts implements UDF1<Long, Object> {
    private static final long serialVersionUID = 1L;
    private static final String RECORD = "\u0000";
    private static final String FIELD = "\u0001";
    // a statement ships two tables (its facts, its paths by ordinal): keep the last two statements' only. 100,000
    // files make ~14M characters of facts; shipped and parsed, they held 57 MB of the driver's heap (measured)
    private static final Map<Long, Map<Long, Object[]>> PARSED = RecentSpecs.create(4);

    private final Shipped table;
    private final String[] types;
    private final int fact;
    private transient Map<Long, Object[]> byKey;
    private transient long currentKey;
    private transient Object[] current;

    private FileFacts(Shipped table, String[] types, int fact) {
        this.table = table;
        this.types = types;
        this.fact = fact;
    }

    /**
     * One column per fact over the {@code key} column; {@code typeNames} names each fact's type ({@code string},
     * {@code int} or {@code bigint}), separated by commas. Fails on the driver for a table that does not parse.
     */
    public static Column[] columns(SparkSession spark, String table, String typeNames, Column key) {
        String[] types = typeNames.split(",", -1);
        Shipped shipped = Shipped.of(JavaSparkContext.fromSparkContext(spark.sparkContext()), table);
        PARSED.put(shipped.id(), parse(table, types));  // tasks on the driver's JVM reuse it
        Column[] out = new Column[types.length];
        for (int i = 0; i < types.length; i++) {
            out[i] = functions.udf(new FileFacts(shipped, types, i), sparkType(types[i])).apply(key);
        }
        return out;
    }

    @Override
    public Object call(Long key) {
        if (key == null) {
            return null;  // a row without a data file (a MERGE's inserted row)
        }
        if (current == null || key != currentKey) {
            if (byKey == null) {
                byKey = PARSED.computeIfAbsent(table.id(), id -> parse(table.value(), types));
            }
            current = byKey.get(key);
            if (current == null) {
                throw new IllegalStateException("a scanned row's data file key " + key + " (its file_size_in_bytes, "
                    + "or its path's hash) is no planned data file's: a manifest disagrees with the file on storage");
            }
            currentKey = key;
        }
        return current[fact];
    }

    private static Map<Long, Object[]> parse(String table, String[] types) {
        Map<Long, Object[]> byKey = new HashMap<>();
        for (String record : table.split(RECORD, -1)) {
            String[] fields = record.split(FIELD, -1);
            if (fields.length != types.length + 1) {
                throw new IllegalArgumentException("a file facts record has " + fields.length + " fields, expected "
                    + (types.length + 1));
            }
            Object[] facts = new Object[types.length];
            for (int i = 0; i < types.length; i++) {
                facts[i] = value(fields[i + 1], types[i]);
            }
            byKey.put(Long.parseLong(fields[0]), facts);
        }
        return byKey;
    }

    private static Object value(String text, String type) {
        if (text.isEmpty() && !"string".equals(type)) {
            return null;
        }
        switch (type) {
            case "string": return text;
            case "int": return Integer.valueOf(text);
            case "bigint": return Long.valueOf(text);
            default: throw new IllegalArgumentException("unknown file fact type " + type);
        }
    }

    private static DataType sparkType(String type) {
        switch (type) {
            case "string": return DataTypes.StringType;
            case "int": return DataTypes.IntegerType;
            case "bigint": return DataTypes.LongType;
            default: throw new IllegalArgumentException("unknown file fact type " + type);
        }
    }
}
