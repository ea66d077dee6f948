package pyice.shim;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.zip.CRC32;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.api.java.UDF5;
import org.apache.spark.sql.types.DataTypes;

/**
 * The {@code deletion-vector-v1} Puffin blob (format v3 deletion vectors) encoded and decoded in the JVM, so
 * that scans and merge-on-read writes need no Python worker stage. A port of pyice_sql's own Python codec
 * (pyice_sql/core/format/deletion_vector.py, whose docstring documents the layout): the same checks, the same
 * error wording, and the same bytes (Java RoaringBitmap's container choice after runOptimize, one 32-bit
 * bitmap for every key from 0 to the highest).
 *
 * <p>SQL functions registered by {@link #register(SparkSession)}:
 * <ul>
 *   <li>{@code pyice_dv_positions(content BINARY, offset BIGINT, length BIGINT, cardinality BIGINT,
 *       path STRING) -> ARRAY<BIGINT>}: the sorted positions of the blob at {@code content[offset, offset +
 *       length)}; a damaged blob, or a count other than {@code cardinality} (unchecked when null), fails the
 *       task with a {@link DeletionVectorError} naming {@code path}. Null content gives null.</li>
 *   <li>{@code pyice_dv_serialize(positions ARRAY<BIGINT>) -> BINARY}: the blob of the set of positions (any
 *       order, duplicates allowed). Null gives null.</li>
 * </ul>
 */
public final class DeletionVectors {
    public static final String POSITIONS_SQL_NAME = "pyice_dv_positions";
    public static final String SERIALIZE_SQL_NAME = "pyice_dv_serialize";
    /** Highest 32-bit key Iceberg Java accepts (the position's top bit is 0). */
    public static final long MAX_KEY = (1L << 31) - 2;

    private static final byte[] MAGIC = {(byte) 0xD1, (byte) 0xD3, 0x39, 0x64};
    private static final int SERIAL_COOKIE_NO_RUN = 12346;
    private static final int SERIAL_COOKIE = 12347;
    private static final int NO_OFFSET_THRESHOLD = 4;
    private static final int ARRAY_MAX = 4096;
    private static final int BITMAP_BYTES = 8192;
    private static final int ARRAY = 0;
    private static final int BITMAP = 1;
    private static final int RUN = 2;
    private static final String[] KIND_NAMES = {"array", "bitmap", "run"};

    private DeletionVectors() {}

    /** A malformed deletion vector; the message ends with the Puffin file it came from. Named as the
     *  Python codec's error, so a failed Spark job reads the same whichever side decoded the blob. */
    public static final class DeletionVectorError extends RuntimeException {
        private static final long serialVersionUID = 1L;

        DeletionVectorError(String message, String where) {
            super(where == null ? message : message + ": " + where);
        }
    }

    /** Registers {@code pyice_dv_positions} and {@code pyice_dv_serialize} in the session's function registry. */
    public static void register(SparkSession spark) {
        spark.udf().register(POSITIONS_SQL_NAME, new PositionsUDF(), DataTypes.createArrayType(DataTypes.LongType));
        spark.udf().register(SERIALIZE_SQL_NAME, new SerializeUDF(), DataTypes.BinaryType);
    }

    /** {@code pyice_dv_positions}: takes numbers as Number, since a Java UDF gets no implicit casts. */
    public static final class PositionsUDF implements UDF5<byte[], Number, Number, Number, String, long[]> {
        private static final long serialVersionUID = 1L;

        @Override
        public long[] call(byte[] content, Number offset, Number length, Number cardinality, String path) {
            if (content == null) {
                return null;
            }
            if (offset == null || length == null) {
                throw new DeletionVectorError("deletion vector entry lacks content_offset or "
                        + "content_size_in_bytes", path);
            }
            return positionsAt(content, offset.longValue(), length.longValue(),
                    cardinality == null ? -1 : cardinality.longValue(), path);
        }
    }

    /** {@code pyice_dv_serialize}: Spark hands an array as a scala Seq (WrappedArray on 2.12, ArraySeq on 2.13). */
    public static final class SerializeUDF implements UDF1<scala.collection.Seq<Object>, byte[]> {
        private static final long serialVersionUID = 1L;

        @Override
        public byte[] call(scala.collection.Seq<Object> positions) {
            if (positions == null) {
                return null;
            }
            long[] values = new long[positions.length()];
            scala.collection.Iterator<Object> it = positions.iterator();
            for (int i = 0; it.hasNext(); i++) {
                Object v = it.next();
                if (v == null) {
                    throw new IllegalArgumentException("a deletion vector cannot hold a null row position");
                }
                values[i] = ((Number) v).longValue();
            }
            return serialize(values);
        }
    }

    /**
     * The positions of the blob at {@code content[offset, offset + length)}, checked against {@code cardinality}
     * (negative: not checked); every error names {@code path}.
     */
    public static long[] positionsAt(byte[] content, long offset, long length, long cardinality, String path) {
        if (offset < 0 || length < 0 || offset > content.length || length > content.length - offset) {
            throw new DeletionVectorError("deletion vector at offset " + offset + " length " + length
                    + " runs past the end of the file (" + content.length + " bytes)", path);
        }
        long[] positions = decode(content, (int) offset, (int) length, path);
        if (cardinality >= 0 && positions.length != cardinality) {
            throw new DeletionVectorError("deletion vector at offset " + offset + " holds " + positions.length
                    + " positions but its manifest entry says " + cardinality, path);
        }
        return positions;
    }

    // ------------------------------------------------------------------------------------------------------
    // Decoding

    /** The ascending positions of the blob at {@code data[off, off + len)}; errors name {@code where}. */
    public static long[] decode(byte[] data, int off, int len, String where) {
        if (len < 12) {
            throw new DeletionVectorError("deletion vector blob is truncated (" + len
                    + " bytes, at least 12 needed)", where);
        }
        if (!Arrays.equals(Arrays.copyOfRange(data, off + 4, off + 8), MAGIC)) {
            throw new DeletionVectorError("deletion vector has wrong magic "
                    + hex(Arrays.copyOfRange(data, off + 4, off + 8)) + " (expected " + hex(MAGIC) + ")", where);
        }
        ByteBuffer be = ByteBuffer.wrap(data, off, len).order(ByteOrder.BIG_ENDIAN);
        long length = be.getInt(off) & 0xFFFFFFFFL;
        if (length != len - 8) {
            throw new DeletionVectorError("deletion vector length prefix says " + length + " bytes of magic "
                    + "and vector, the blob holds " + (len - 8) + ": truncated or corrupt", where);
        }
        long stored = be.getInt(off + len - 4) & 0xFFFFFFFFL;
        CRC32 crc = new CRC32();
        crc.update(data, off + 4, len - 8);
        if (stored != crc.getValue()) {
            throw new DeletionVectorError(String.format("deletion vector CRC-32 mismatch (stored %08x, "
                    + "computed %08x)", stored, crc.getValue()), where);
        }
        return new Reader(data, off + 8, len - 12, where).positions();
    }

    /** Walks the Roaring 64-bit portable serialization, checking layout and cardinalities. */
    private static final class Reader {
        private final ByteBuffer buf;
        private final int start;
        private final int size;
        private final String where;
        private long[] out = new long[64];
        private int count;

        Reader(byte[] data, int start, int size, String where) {
            this.buf = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
            this.start = start;
            this.size = size;
            this.where = where;
        }

        /** Position of the cursor relative to the vector's start. */
        private int pos() {
            return buf.position() - start;
        }

        private void take(long n) {
            if (pos() + n > size) {
                throw new DeletionVectorError("deletion vector is truncated: needs " + n + " bytes at offset "
                        + pos() + " of a " + size + "-byte vector", where);
            }
        }

        private long u32() {
            take(4);
            return buf.getInt() & 0xFFFFFFFFL;
        }

        private int u16() {
            take(2);
            return buf.getShort() & 0xFFFF;
        }

        long[] positions() {
            buf.position(start);
            take(8);
            long bitmaps = buf.getLong();
            long lastKey = -1;
            for (long i = 0; Long.compareUnsigned(i, bitmaps) < 0; i++) {
                long key = u32();
                if (key <= lastKey || key > MAX_KEY) {
                    throw new DeletionVectorError("deletion vector key " + key + " is out of order or too large",
                            where);
                }
                lastKey = key;
                bitmap32(key << 32);
            }
            if (pos() != size) {
                throw new DeletionVectorError("deletion vector has " + (size - pos())
                        + " bytes after its last bitmap", where);
            }
            return Arrays.copyOf(out, count);
        }

        private void bitmap32(long base) {
            int at = pos();
            long cookie = u32();
            int containers;
            byte[] runFlags;
            if ((cookie & 0xFFFF) == SERIAL_COOKIE) {
                containers = (int) (cookie >>> 16) + 1;
                runFlags = new byte[(containers + 7) / 8];
                take(runFlags.length);
                buf.get(runFlags);
            } else if (cookie == SERIAL_COOKIE_NO_RUN) {
                long n = u32();
                if (n > 1 << 16) {
                    throw new DeletionVectorError("deletion vector bitmap at offset " + at + " claims " + n
                            + " containers", where);
                }
                containers = (int) n;
                runFlags = new byte[(containers + 7) / 8];
            } else {
                throw new DeletionVectorError("deletion vector bitmap at offset " + at + " has an unknown cookie "
                        + cookie, where);
            }
            take(4L * containers);
            int[] keys = new int[containers];
            int[] cards = new int[containers];
            for (int i = 0; i < containers; i++) {
                keys[i] = buf.getShort() & 0xFFFF;
                cards[i] = (buf.getShort() & 0xFFFF) + 1;
                if (i > 0 && keys[i - 1] >= keys[i]) {
                    throw new DeletionVectorError("deletion vector bitmap at offset " + at
                            + " has unordered container keys", where);
                }
            }
            long[] offsets = null;
            if (cookie == SERIAL_COOKIE_NO_RUN || containers >= NO_OFFSET_THRESHOLD) {
                take(4L * containers);
                offsets = new long[containers];
                for (int i = 0; i < containers; i++) {
                    offsets[i] = buf.getInt() & 0xFFFFFFFFL;
                }
            }
            for (int i = 0; i < containers; i++) {
                if (offsets != null && offsets[i] != pos() - at) {
                    throw new DeletionVectorError("deletion vector container " + i + " of the bitmap at offset "
                            + at + " is at " + (pos() - at) + ", its offset table says " + offsets[i], where);
                }
                container(i, base | (long) keys[i] << 16, cards[i], (runFlags[i / 8] >> (i % 8) & 1) != 0);
            }
        }

        private void container(int i, long base, int card, boolean isRun) {
            ensure(card);
            int kind;
            int covered;
            if (isRun) {
                kind = RUN;
                int runs = u16();
                take(4L * runs);
                int end = -1;
                covered = 0;
                for (int r = 0; r < runs; r++) {
                    int first = buf.getShort() & 0xFFFF;
                    int extra = buf.getShort() & 0xFFFF;
                    if (first <= end || first + extra > 0xFFFF) {
                        throw new DeletionVectorError("deletion vector run container has overlapping, unordered "
                                + "or overflowing runs", where);
                    }
                    end = first + extra;
                    covered += extra + 1;
                    if (covered <= card) {
                        for (int v = first; v <= end; v++) {
                            out[count++] = base + v;
                        }
                    }
                }
            } else if (card > ARRAY_MAX) {
                kind = BITMAP;
                take(BITMAP_BYTES);
                covered = 0;
                for (int w = 0; w < BITMAP_BYTES / 8; w++) {
                    long word = buf.getLong();
                    covered += Long.bitCount(word);
                    while (word != 0 && covered <= card) {
                        out[count++] = base + 64 * w + Long.numberOfTrailingZeros(word);
                        word &= word - 1;
                    }
                }
            } else {
                kind = ARRAY;
                take(2L * card);
                int last = -1;
                for (int k = 0; k < card; k++) {
                    int v = buf.getShort() & 0xFFFF;
                    if (v <= last) {
                        throw new DeletionVectorError("deletion vector array container is not strictly ascending",
                                where);
                    }
                    last = v;
                    out[count++] = base + v;
                }
                covered = card;
            }
            if (covered != card) {
                throw new DeletionVectorError("deletion vector " + KIND_NAMES[kind] + " container " + i
                        + " holds " + covered + " positions, its header says " + card, where);
            }
        }

        /** Room for {@code more} positions (a container never holds more than its header's card). */
        private void ensure(int more) {
            if (out.length - count < more) {
                long want = Math.max((long) out.length * 2, (long) count + more);
                if (want > Integer.MAX_VALUE - 8) {
                    throw new DeletionVectorError("deletion vector holds more positions than fit one array",
                            where);
                }
                out = Arrays.copyOf(out, (int) want);
            }
        }
    }

    // ------------------------------------------------------------------------------------------------------
    // Encoding

    /** The {@code deletion-vector-v1} blob of the set of {@code positions} (any order, duplicates allowed). */
    public static byte[] serialize(long[] positions) {
        long[] p = positions.clone();
        Arrays.sort(p);
        int n = 0;
        for (int i = 0; i < p.length; i++) {
            if (i == 0 || p[i] != p[i - 1]) {
                p[n++] = p[i];
            }
        }
        if (n > 0 && (p[0] < 0 || p[n - 1] >>> 32 > MAX_KEY)) {
            long bad = p[0] < 0 ? p[0] : p[n - 1];
            throw new IllegalArgumentException("row position " + bad + " is outside what a deletion vector holds (0 .. "
                    + (((MAX_KEY + 1) << 32) - 1) + ")");
        }
        Containers c = new Containers(p, n);
        long top = n == 0 ? -1 : p[n - 1] >>> 32;
        long size = 4 + 4 + 8 + 4;  // length, magic, bitmap count, CRC
        int first = 0;
        for (long key = 0; key <= top; key++) {
            int end = c.end(first, key);
            size += 4 + c.bitmapSize(first, end);
            first = end;
        }
        if (size > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("deletion vector of " + size + " bytes is too large");
        }
        ByteBuffer out = ByteBuffer.allocate((int) size).order(ByteOrder.LITTLE_ENDIAN);
        out.order(ByteOrder.BIG_ENDIAN).putInt((int) size - 8).put(MAGIC).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(top + 1);
        for (long key = 0; key <= top; key++) {
            out.putInt((int) key);
            c.writeBitmap(key, out);
        }
        CRC32 crc = new CRC32();
        crc.update(out.array(), 4, (int) size - 8);
        out.order(ByteOrder.BIG_ENDIAN).putInt((int) crc.getValue());
        return out.array();
    }

    /** The 16-bit containers of sorted distinct positions, each with the kind Java's runOptimize picks. */
    private static final class Containers {
        private final long[] p;
        private final int[] from;    // first index into p of each container, plus a final n
        private final int[] kind;
        private final int[] runs;
        private final int count;
        private int cursor;          // first container of the next key writeBitmap visits

        Containers(long[] p, int n) {
            this.p = p;
            int[] f = new int[n + 1];
            int c = 0;
            for (int i = 0; i < n; i++) {
                if (i == 0 || p[i] >>> 16 != p[i - 1] >>> 16) {
                    f[c++] = i;
                }
            }
            f[c] = n;
            this.from = Arrays.copyOf(f, c + 1);
            this.count = c;
            this.kind = new int[c];
            this.runs = new int[c];
            for (int k = 0; k < c; k++) {
                int card = from[k + 1] - from[k];
                int r = 0;
                for (int i = from[k]; i < from[k + 1]; i++) {
                    if (i == from[k] || p[i - 1] != p[i] - 1) {
                        r++;
                    }
                }
                runs[k] = r;
                int runSize = 2 + 4 * r;
                if (runSize < (card <= ARRAY_MAX ? 2 * card : BITMAP_BYTES)) {
                    kind[k] = RUN;
                } else {
                    kind[k] = card <= ARRAY_MAX ? ARRAY : BITMAP;
                }
            }
        }

        private int payloadSize(int k) {
            switch (kind[k]) {
                case RUN:
                    return 2 + 4 * runs[k];
                case ARRAY:
                    return 2 * (from[k + 1] - from[k]);
                default:
                    return BITMAP_BYTES;
            }
        }

        /** The end of the containers of the 32-bit key {@code key}, which start at {@code first}. */
        int end(int first, long key) {
            int e = first;
            while (e < count && p[from[e]] >>> 32 == key) {
                e++;
            }
            return e;
        }

        private boolean hasRun(int first, int end) {
            for (int k = first; k < end; k++) {
                if (kind[k] == RUN) {
                    return true;
                }
            }
            return false;
        }

        private int headerSize(int first, int end) {
            int size = end - first;
            boolean hasRun = hasRun(first, end);
            int header = hasRun ? 4 + (size + 7) / 8 : 8;
            header += 4 * size;
            if (!hasRun || size >= NO_OFFSET_THRESHOLD) {
                header += 4 * size;
            }
            return header;
        }

        /** Bytes of the 32-bit RoaringBitmap made of the containers [first, end). */
        long bitmapSize(int first, int end) {
            long size = headerSize(first, end);
            for (int k = first; k < end; k++) {
                size += payloadSize(k);
            }
            return size;
        }

        /** Writes the 32-bit RoaringBitmap of {@code key}; every key from 0 up is visited in order. */
        void writeBitmap(long key, ByteBuffer out) {
            int first = cursor;
            int end = end(first, key);
            cursor = end;
            int size = end - first;
            boolean hasRun = hasRun(first, end);
            if (hasRun) {
                out.putInt(SERIAL_COOKIE | (size - 1) << 16);
                byte[] flags = new byte[(size + 7) / 8];
                for (int k = first; k < end; k++) {
                    if (kind[k] == RUN) {
                        flags[(k - first) / 8] |= (byte) (1 << ((k - first) % 8));
                    }
                }
                out.put(flags);
            } else {
                out.putInt(SERIAL_COOKIE_NO_RUN).putInt(size);
            }
            for (int k = first; k < end; k++) {
                out.putShort((short) (p[from[k]] >>> 16)).putShort((short) (from[k + 1] - from[k] - 1));
            }
            if (!hasRun || size >= NO_OFFSET_THRESHOLD) {
                int offset = headerSize(first, end);
                for (int k = first; k < end; k++) {
                    out.putInt(offset);
                    offset += payloadSize(k);
                }
            }
            for (int k = first; k < end; k++) {
                writePayload(k, out);
            }
        }

        private void writePayload(int k, ByteBuffer out) {
            int a = from[k];
            int b = from[k + 1];
            if (kind[k] == RUN) {
                out.putShort((short) runs[k]);
                int s = a;
                for (int i = a; i < b; i++) {
                    if (i == b - 1 || p[i + 1] != p[i] + 1) {
                        out.putShort((short) p[s]).putShort((short) (p[i] - p[s]));
                        s = i + 1;
                    }
                }
            } else if (kind[k] == ARRAY) {
                for (int i = a; i < b; i++) {
                    out.putShort((short) p[i]);
                }
            } else {
                long[] words = new long[BITMAP_BYTES / 8];
                for (int i = a; i < b; i++) {
                    int low = (int) (p[i] & 0xFFFF);
                    words[low >>> 6] |= 1L << (low & 63);
                }
                for (long w : words) {
                    out.putLong(w);
                }
            }
        }
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b) {
            s.append(String.format("%02x", x & 0xFF));
        }
        return s.toString();
    }
}
