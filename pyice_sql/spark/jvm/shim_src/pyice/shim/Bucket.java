package pyice.shim;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.UUID;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;

/**
 * Iceberg's bucket transform: {@code (murmur3_x86_32(bytes, seed 0) & Integer.MAX_VALUE) % n}.
 *
 * <p>Bytes hashed (Iceberg spec, "Bucket transform details"): integers, dates (days), times and timestamps
 * (microseconds) as an 8-byte little-endian long; strings as UTF-8; binary as is; decimals as the minimal
 * big-endian two's complement of the unscaled value; UUIDs as 16 big-endian bytes.
 *
 * <p>From Spark, pass dates as {@code unix_date(d)} and timestamps as {@code unix_micros(ts)}: the Date and
 * Timestamp objects Spark hands to a Java UDF are also accepted, but they go through Spark's calendar
 * rebasing for very old values.
 */
public final class Bucket {
    /** Name of the SQL function registered by {@link #register(SparkSession)}. */
    public static final String SQL_NAME = "pyice_bucket";

    private static final int C1 = 0xcc9e2d51;
    private static final int C2 = 0x1b873593;

    private Bucket() {}

    /** Registers {@code pyice_bucket(n INT, value) -> INT} in the session's function registry. */
    public static void register(SparkSession spark) {
        spark.udf().register(SQL_NAME, new BucketUDF(), DataTypes.IntegerType);
    }

    /** The bucket of {@code value} among {@code n} buckets, or null for a null value. */
    public static Integer bucket(Object value, int n) {
        if (n <= 0) {
            throw new IllegalArgumentException("bucket count must be positive: " + n);
        }
        if (value == null) {
            return null;
        }
        return (hash(value) & Integer.MAX_VALUE) % n;
    }

    /** Iceberg's bucket hash of a Java value as Spark passes it to a UDF. */
    public static int hash(Object v) {
        if (v instanceof Long || v instanceof Integer || v instanceof Short || v instanceof Byte) {
            return hashLong(((Number) v).longValue());
        } else if (v instanceof String) {
            return murmur3(((String) v).getBytes(StandardCharsets.UTF_8));
        } else if (v instanceof byte[]) {
            return murmur3((byte[]) v);
        } else if (v instanceof BigDecimal) {
            return murmur3(((BigDecimal) v).unscaledValue().toByteArray());
        } else if (v instanceof LocalDate) {
            return hashLong(((LocalDate) v).toEpochDay());
        } else if (v instanceof java.sql.Date) {
            return hashLong(((java.sql.Date) v).toLocalDate().toEpochDay());
        } else if (v instanceof Instant) {
            return hashLong(micros((Instant) v));
        } else if (v instanceof java.sql.Timestamp) {
            return hashLong(micros(((java.sql.Timestamp) v).toInstant()));
        } else if (v instanceof LocalDateTime) {
            return hashLong(micros(((LocalDateTime) v).toInstant(ZoneOffset.UTC)));
        } else if (v instanceof UUID) {
            UUID u = (UUID) v;
            byte[] b = new byte[16];
            putLongBE(b, 0, u.getMostSignificantBits());
            putLongBE(b, 8, u.getLeastSignificantBits());
            return murmur3(b);
        }
        throw new IllegalArgumentException("cannot bucket a value of " + v.getClass().getName());
    }

    /** Hash of a long as 8 little-endian bytes (also used for int, date, time and timestamp). */
    public static int hashLong(long v) {
        byte[] b = new byte[8];
        for (int i = 0; i < 8; i++) {
            b[i] = (byte) (v >>> (8 * i));
        }
        return murmur3(b);
    }

    /** MurmurHash3 x86 32-bit of all of {@code data}, seed 0. */
    public static int murmur3(byte[] data) {
        return murmur3Range(data, 0, data.length, 0);
    }

    /** MurmurHash3 x86 32-bit of {@code data[off, off+len)} with the given seed. */
    @SuppressWarnings("fallthrough")
    public static int murmur3Range(byte[] data, int off, int len, int seed) {
        int h = seed;
        int blocks = len >>> 2;
        for (int i = 0; i < blocks; i++) {
            int p = off + 4 * i;
            int k = (data[p] & 0xff) | (data[p + 1] & 0xff) << 8 | (data[p + 2] & 0xff) << 16 | (data[p + 3] << 24);
            h ^= mixK(k);
            h = Integer.rotateLeft(h, 13) * 5 + 0xe6546b64;
        }
        int tail = off + 4 * blocks;
        int k = 0;
        switch (len & 3) {
            case 3:
                k ^= (data[tail + 2] & 0xff) << 16;
                // fall through
            case 2:
                k ^= (data[tail + 1] & 0xff) << 8;
                // fall through
            case 1:
                k ^= data[tail] & 0xff;
                h ^= mixK(k);
                break;
            default:
                break;
        }
        h ^= len;
        h ^= h >>> 16;
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        h *= 0xc2b2ae35;
        h ^= h >>> 16;
        return h;
    }

    private static int mixK(int k) {
        k *= C1;
        k = Integer.rotateLeft(k, 15);
        return k * C2;
    }

    private static long micros(Instant t) {
        return Math.addExact(Math.multiplyExact(t.getEpochSecond(), 1_000_000L), t.getNano() / 1000);
    }

    private static void putLongBE(byte[] b, int off, long v) {
        for (int i = 0; i < 8; i++) {
            b[off + i] = (byte) (v >>> (56 - 8 * i));
        }
    }
}
