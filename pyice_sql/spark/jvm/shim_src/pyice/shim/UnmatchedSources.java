package pyice.shim;

import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.DataTypes;
import org.roaringbitmap.longlong.Roaring64Bitmap;

/**
 * The test of a copy-on-write MERGE's source row ids that no matched pair had ({@link FileChanges}: the ids of the
 * matched pairs' source rows, one bitmap, serialized since Roaring64Bitmap is not Serializable). Registered
 * through {@link ShimFunctions}, SQL text calls it in the subquery that reads the unmatched source rows, so they
 * need no DataFrame filter and temp view of their own; {@link #asUdf} where that catalog cannot load.
 */
public final class UnmatchedSources extends RowPredicate {
    private static final long serialVersionUID = 1L;

    private final byte[] matched;
    private transient Roaring64Bitmap ids;

    UnmatchedSources(byte[] matched) {
        super("unmatched_sources", "unmatched_sources(source row id): whether no matched pair had that source row",
              DataTypes.LongType);
        this.matched = matched;
    }

    /** Called by Spark's generated code with the row's id (a null id never reaches it: the result is null). */
    public boolean invoke(long id) {
        if (ids == null) {
            Roaring64Bitmap b = new Roaring64Bitmap();
            try {
                b.deserialize(new DataInputStream(new ByteArrayInputStream(matched)));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            ids = b;
        }
        return !ids.contains(id);
    }

    /** The test as a Java UDF: false for a null id. */
    UDF1<Long, Boolean> asUdf() {
        return new AsUdf(this);
    }

    private static final class AsUdf implements UDF1<Long, Boolean> {
        private static final long serialVersionUID = 1L;
        private final UnmatchedSources test;

        AsUdf(UnmatchedSources test) {
            this.test = test;
        }

        @Override
        public Boolean call(Long id) {
            return id != null && test.invoke(id);
        }
    }
}
