package pyice.shim;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** Specs parsed on this JVM, by the id of the broadcast that shipped them: the tasks of one job parse once. */
final class RecentSpecs {
    private RecentSpecs() {}

    /** A thread-safe map keeping the {@code size} most recently used entries. */
    static <V> Map<Long, V> create(int size) {
        return Collections.synchronizedMap(new LinkedHashMap<Long, V>(16, 0.75f, true) {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, V> eldest) {
                return size() > size;
            }
        });
    }
}
