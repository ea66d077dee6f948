package pyice.shim;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.broadcast.Broadcast;

/**
 * Table maintenance touches many files (orphan listing, expiry deletes): these run as one Spark job over
 * the paths, each executor using the Hadoop FileSystem of the path's scheme, so the driver never makes one
 * call per file.
 */
public final class BulkFiles {
    private BulkFiles() {}

    /**
     * Deletes {@code paths} in one Spark job; returns a JSON array of [path, error] for the files that could
     * not be deleted (a file already gone counts as deleted).
     */
    public static String delete(JavaSparkContext jsc, List<String> paths, Configuration conf) throws IOException {
        return run(jsc, paths, conf, true, "delete " + paths.size() + " file(s)");
    }

    /**
     * Lists every file below each of {@code dirs} (recursively) in one Spark job: a JSON array of
     * {"path", "length", "modified", "dir"} objects as {@link FileOps#list} writes them.
     */
    public static String list(JavaSparkContext jsc, List<String> dirs, Configuration conf) throws IOException {
        return run(jsc, dirs, conf, false, "list " + dirs.size() + " folder(s)");
    }

    private static String run(JavaSparkContext jsc, List<String> items, Configuration conf, boolean delete,
                              String what) throws IOException {
        if (items.isEmpty()) {
            return "[]";
        }
        Configuration c = conf != null ? conf : jsc.hadoopConfiguration();
        Broadcast<byte[]> confBytes = jsc.broadcast(FooterStats.toBytes(c));
        int slices = Math.max(1, Math.min(items.size(), 2 * jsc.defaultParallelism()));
        String previous = jsc.getLocalProperty("spark.job.description");
        jsc.setJobDescription("pyice_sql: " + what);
        try {
            List<String> out = jsc.parallelize(new ArrayList<>(items), slices)
                .mapPartitions(new Work(confBytes, delete)).collect();
            return "[" + String.join(",", out) + "]";
        } finally {
            jsc.setLocalProperty("spark.job.description", previous);
            confBytes.destroy();
        }
    }

    private static final class Work implements FlatMapFunction<Iterator<String>, String> {
        private static final long serialVersionUID = 1L;
        private final Broadcast<byte[]> confBytes;
        private final boolean delete;

        Work(Broadcast<byte[]> confBytes, boolean delete) {
            this.confBytes = confBytes;
            this.delete = delete;
        }

        @Override
        public Iterator<String> call(Iterator<String> items) throws IOException {
            Configuration conf = FooterStats.fromBytes(confBytes.value());
            List<String> out = new ArrayList<>();
            while (items.hasNext()) {
                String item = items.next();
                Path p = new Path(item);
                FileSystem fs = p.getFileSystem(conf);
                if (delete) {
                    try {
                        if (!fs.delete(p, false) && fs.exists(p)) {
                            out.add(failure(item, "not deleted"));
                        }
                    } catch (IOException | RuntimeException e) {
                        out.add(failure(item, e.toString()));
                    }
                } else {
                    try {
                        RemoteIterator<LocatedFileStatus> it = fs.listFiles(p, true);
                        while (it.hasNext()) {
                            out.add(entry(it.next()));
                        }
                    } catch (FileNotFoundException e) {
                        // a folder removed while listing holds no files
                    }
                }
            }
            return out.iterator();
        }
    }

    private static String failure(String path, String error) {
        StringBuilder sb = new StringBuilder("[");
        Json.str(sb, path).append(',');
        return Json.str(sb, error).append(']').toString();
    }

    private static String entry(FileStatus st) {
        StringBuilder sb = new StringBuilder("{");
        Json.key(sb, "path");
        Json.str(sb, st.getPath().toString()).append(',');
        Json.key(sb, "length").append(st.getLen()).append(',');
        Json.key(sb, "modified").append(st.getModificationTime()).append(',');
        Json.key(sb, "dir").append(st.isDirectory()).append('}');
        return sb.toString();
    }
}
