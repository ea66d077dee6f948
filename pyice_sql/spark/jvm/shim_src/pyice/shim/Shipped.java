package pyice.shim;

import java.io.Serializable;
import java.util.concurrent.ThreadLocalRandom;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;

/**
 * A statement's spec (a string the tasks parse: targets, file facts, deletes) on its way to the tasks: inside the
 * task itself when small, else as a broadcast variable. Each broadcast is a fetch from the driver by every
 * executor, one after another in the task (15-35 ms each on a two-executor local cluster, measured), and a
 * statement ships three to five specs; a small spec costs nothing riding in the task, which every task fetches
 * anyway. A large one (100,000 files: megabytes) is broadcast, so each executor fetches it once. Either way the
 * spec carries an id of its own, by which each JVM keeps its parsed form ({@link RecentSpecs}): the tasks of one
 * job parse it once.
 */
final class Shipped implements Serializable {
    private static final long serialVersionUID = 1L;
    /** Specs up to this many characters ride in the task (a JVM system property, so tests can take either path). */
    private static final String INLINE_LIMIT_PROPERTY = "pyice.shim.inlineSpecChars";
    private static final int INLINE_LIMIT = 64 * 1024;

    private final long id;
    private final String inline;  // null when broadcast
    // a JDK type, so the block manager resolves it without the shim's class loader
    private final Broadcast<String> broadcast;

    private Shipped(long id, String inline, Broadcast<String> broadcast) {
        this.id = id;
        this.inline = inline;
        this.broadcast = broadcast;
    }

    static Shipped of(JavaSparkContext jsc, String spec) {
        long id = ThreadLocalRandom.current().nextLong();
        boolean small = spec.length() <= Integer.getInteger(INLINE_LIMIT_PROPERTY, INLINE_LIMIT);
        return small ? new Shipped(id, spec, null) : new Shipped(id, null, jsc.broadcast(spec));
    }

    /** The key of this spec's parsed form on every JVM. */
    long id() {
        return id;
    }

    String value() {
        return inline != null ? inline : broadcast.value();
    }
}
