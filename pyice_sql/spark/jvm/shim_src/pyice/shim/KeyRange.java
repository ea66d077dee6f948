package pyice.shim;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;

/**
 * A MERGE's source-key range as a row predicate on the target scan ({@code key BETWEEN lo AND hi} for integral
 * keys), its bounds held by the function object. Spark writes long literals into the generated code, so a
 * {@code BETWEEN} whose bounds change with every statement's source compiled the scan stages again each time
 * (five classes, ~40 ms, on a copy-on-write MERGE); the code that calls this function is the same whatever the
 * bounds.
 */
public final class KeyRange extends RowPredicate {
    private static final long serialVersionUID = 1L;

    private final long lo;
    private final long hi;

    private KeyRange(long lo, long hi) {
        super("key_range", "key_range(key): whether the key is within the source's key range", DataTypes.LongType);
        this.lo = lo;
        this.hi = hi;
    }

    /**
     * The name under which SQL text calls the predicate for {@code [lo, hi]} (one bigint argument; narrower
     * integers are widened by Spark); null when Spark cannot load {@link ShimFunctions} (the caller writes
     * {@code BETWEEN}).
     */
    public static String register(SparkSession spark, long lo, long hi) {
        return ShimFunctions.register(spark, new KeyRange(lo, hi));
    }

    /** Called by Spark's generated code with the row's key (a null key never reaches it: the result is null). */
    public boolean invoke(long key) {
        return key >= lo && key <= hi;
    }
}
