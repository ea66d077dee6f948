package pyice.shim;

import java.util.Arrays;

/** A growable array of longs (the positions of one data file). */
final class LongList {
    private long[] values = new long[16];
    private int size;

    void add(long v) {
        if (size == values.length) {
            values = Arrays.copyOf(values, size * 2);
        }
        values[size++] = v;
    }

    long[] toArray() {
        return Arrays.copyOf(values, size);
    }
}
