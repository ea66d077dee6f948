package pyice.shim;

import java.nio.charset.StandardCharsets;

/**
 * Spark's {@code xxhash64} of a string (XXH64 of its UTF-8 bytes, seed 42), computed on the driver. A scan keys
 * the rows of files that share a size by this hash of their path (read/file_keys.py), and the driver needs the
 * same key of each such file: asking Spark for it is a query over a local relation, 20-25 ms of planning and
 * execution events per statement (measured), for what is microseconds of arithmetic. XXH64 is a fixed public
 * algorithm (https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md); the tests compare this with Spark's
 * own function.
 */
final class XxHash64 {
    private static final long SEED = 42L;  // Spark's XxHash64 expression
    private static final long P1 = 0x9E3779B185EBCA87L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;
    private static final long P3 = 0x165667B19E3779F9L;
    private static final long P4 = 0x85EBCA77C2B2AE63L;
    private static final long P5 = 0x27D4EB2F165667C5L;

    private XxHash64() {}

    static long of(String s) {
        return hash(s.getBytes(StandardCharsets.UTF_8));
    }

    static long hash(byte[] b) {
        int n = b.length;
        int i = 0;
        long h;
        if (n >= 32) {
            long v1 = SEED + P1 + P2;
            long v2 = SEED + P2;
            long v3 = SEED;
            long v4 = SEED - P1;
            for (; i <= n - 32; i += 32) {
                v1 = round(v1, longAt(b, i));
                v2 = round(v2, longAt(b, i + 8));
                v3 = round(v3, longAt(b, i + 16));
                v4 = round(v4, longAt(b, i + 24));
            }
            h = Long.rotateLeft(v1, 1) + Long.rotateLeft(v2, 7) + Long.rotateLeft(v3, 12) + Long.rotateLeft(v4, 18);
            h = merge(h, v1);
            h = merge(h, v2);
            h = merge(h, v3);
            h = merge(h, v4);
        } else {
            h = SEED + P5;
        }
        h += n;
        for (; i <= n - 8; i += 8) {
            h ^= round(0, longAt(b, i));
            h = Long.rotateLeft(h, 27) * P1 + P4;
        }
        if (i <= n - 4) {
            h ^= (intAt(b, i) & 0xFFFFFFFFL) * P1;
            h = Long.rotateLeft(h, 23) * P2 + P3;
            i += 4;
        }
        for (; i < n; i++) {
            h ^= (b[i] & 0xFFL) * P5;
            h = Long.rotateLeft(h, 11) * P1;
        }
        h ^= h >>> 33;
        h *= P2;
        h ^= h >>> 29;
        h *= P3;
        h ^= h >>> 32;
        return h;
    }

    private static long round(long acc, long input) {
        return Long.rotateLeft(acc + input * P2, 31) * P1;
    }

    private static long merge(long acc, long v) {
        return (acc ^ round(0, v)) * P1 + P4;
    }

    private static long longAt(byte[] b, int i) {  // little-endian, as the algorithm reads its input
        return (intAt(b, i) & 0xFFFFFFFFL) | ((long) intAt(b, i + 4) << 32);
    }

    private static int intAt(byte[] b, int i) {
        return (b[i] & 0xFF) | (b[i + 1] & 0xFF) << 8 | (b[i + 2] & 0xFF) << 16 | (b[i + 3] & 0xFF) << 24;
    }
}
