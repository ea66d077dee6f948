package pyice.shim;

import org.apache.spark.sql.api.java.UDF2;

/**
 * Spark SQL UDF {@code pyice_bucket(n, value)}: Iceberg's bucket transform, null for a null value or count.
 * Serializable, so its tasks run on executors that received the shim jar through {@code addJar}/{@code spark.jars}.
 */
public final class BucketUDF implements UDF2<Integer, Object, Integer> {
    private static final long serialVersionUID = 1L;

    @Override
    public Integer call(Integer n, Object value) {
        if (n == null || value == null) {
            return null;
        }
        return Bucket.bucket(value, n);
    }
}
